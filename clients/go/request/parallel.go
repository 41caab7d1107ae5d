package request

import (
	"runtime"
	"sync"
)

// parallelMin is the fewest pods a worker is given: below it, starting
// goroutines costs more than it saves.
const parallelMin = 4096

// workersFor is how many workers n pods get: one per CPU, each with at least
// parallelMin pods.
func workersFor(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n/parallelMin)) }

// inParallel runs work over [0, n) split into contiguous ranges, worker w
// taking the w-th, and returns the error of the lowest range that failed,
// so that the first bad pod is the one reported.
func inParallel(n, workers int, work func(w, from, to int) error) error {
	if workers <= 1 {
		return work(0, 0, n)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = work(w, n*w/workers, n*(w+1)/workers)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
