package upstream

// This file reaches into the unexported parts of upstream's Job controller
// (k8s.io/kubernetes/pkg/controller/job), the way upstream's own unit tests
// drive it from inside the package. It is test-only harness code: the
// go:linkname pulls need `-ldflags=-checklinkname=0`, and the field swaps
// below use reflect + unsafe on unexported fields. Every access is checked
// against the field's name and type so that an upstream refactor fails loudly
// here instead of misbehaving.

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/utils/clock"
)

//go:linkname newControllerWithClock k8s.io/kubernetes/pkg/controller/job.newControllerWithClock
func newControllerWithClock(ctx context.Context, kubeClient clientset.Interface, clock clock.WithTicker,
	podInformer coreinformers.PodInformer, jobInformer batchinformers.JobInformer,
	workloadInformer schedulinginformers.WorkloadInformer,
	podGroupInformer schedulinginformers.PodGroupInformer) (*job.Controller, error)

//go:linkname syncJob k8s.io/kubernetes/pkg/controller/job.(*Controller).syncJob
func syncJob(jm *job.Controller, ctx context.Context, key string) error

// handleSingleOrphanPod is the orphan-pod worker's step for one pod: it
// removes the tracking finalizer unless the pod is controlled by a Job that
// exists, is ours and is not finished.
//
//go:linkname handleSingleOrphanPod k8s.io/kubernetes/pkg/controller/job.(*Controller).handleSingleOrphanPod
func handleSingleOrphanPod(jm *job.Controller, ctx context.Context, pod *v1.Pod) error

// The receiver is a *uidTrackingExpectations (unexported type), passed as a pointer.
//
//go:linkname expectFinalizersRemoved k8s.io/kubernetes/pkg/controller/job.(*uidTrackingExpectations).expectFinalizersRemoved
func expectFinalizersRemoved(u unsafe.Pointer, logger klog.Logger, jobKey string, deletedKeys []types.UID) error

// backoffRecordMirror has the layout of upstream's unexported backoffRecord
// (checked by checkBackoffLayout before first use).
type backoffRecordMirror struct {
	key                      string
	failuresAfterLastSuccess int32
	lastFailureTime          *time.Time
}

// The receiver is a *backoffStore (unexported type), passed as a pointer.
//
//go:linkname updateBackoffRecord k8s.io/kubernetes/pkg/controller/job.(*backoffStore).updateBackoffRecord
func updateBackoffRecord(s unsafe.Pointer, record backoffRecordMirror) error

// fieldPtr returns a pointer to the unexported field `name` of the controller,
// after checking its type is T.
func fieldPtr[T any](jm *job.Controller, name string) *T {
	f := reflect.ValueOf(jm).Elem().FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("upstream job.Controller has no field %q any more", name))
	}
	if want := reflect.TypeFor[T](); f.Type() != want {
		panic(fmt.Sprintf("upstream job.Controller.%s is %v, the harness expects %v", name, f.Type(), want))
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr()))
}

// opaquePtrField returns the value of a pointer-typed unexported field whose
// type is itself unexported (e.g. *backoffStore), checking the type's name.
func opaquePtrField(jm *job.Controller, name, typeName string) unsafe.Pointer {
	f := reflect.ValueOf(jm).Elem().FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("upstream job.Controller has no field %q any more", name))
	}
	if f.Kind() != reflect.Pointer || f.Type().Elem().Name() != typeName {
		panic(fmt.Sprintf("upstream job.Controller.%s is %v, the harness expects *%s", name, f.Type(), typeName))
	}
	return *(*unsafe.Pointer)(unsafe.Pointer(f.UnsafeAddr()))
}

// callMethod calls an exported method (e.g. ShutDown) on an unexported field
// whose static type cannot be named here (a generic over an unexported type).
func callMethod(jm *job.Controller, fieldName, method string) {
	f := reflect.ValueOf(jm).Elem().FieldByName(fieldName)
	if !f.IsValid() {
		panic(fmt.Sprintf("upstream job.Controller has no field %q any more", fieldName))
	}
	v := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	if v.Kind() == reflect.Interface && v.IsNil() {
		return
	}
	m := v.MethodByName(method)
	if !m.IsValid() {
		panic(fmt.Sprintf("upstream job.Controller.%s has no method %s", fieldName, method))
	}
	m.Call(nil)
}

// backoffStoreOf returns the cache.Store inside the controller's *backoffStore.
func backoffStoreOf(jm *job.Controller) (unsafe.Pointer, cache.Store) {
	bs := opaquePtrField(jm, "podBackoffStore", "backoffStore")
	st := reflect.ValueOf(jm).Elem().FieldByName("podBackoffStore").Type().Elem()
	f, ok := st.FieldByName("store")
	if !ok || f.Type != reflect.TypeFor[cache.Store]() || f.Offset != 0 {
		panic(fmt.Sprintf("upstream backoffStore layout changed: %v", st))
	}
	return bs, *(*cache.Store)(bs)
}

var backoffLayout struct {
	once sync.Once
	err  error
}

// checkBackoffLayout verifies once that backoffRecordMirror matches upstream's
// backoffRecord field for field.
func checkBackoffLayout(jm *job.Controller) error {
	backoffLayout.once.Do(func() {
		want := reflect.TypeFor[backoffRecordMirror]()
		backoffStoreOf(jm) // checks the store's layout
		// Read the type from a throwaway record added through upstream's own code.
		probe := cache.NewStore(func(obj any) (string, error) { return "probe", nil })
		tmp := struct{ store cache.Store }{probe}
		if err := updateBackoffRecord(unsafe.Pointer(&tmp), backoffRecordMirror{key: "probe"}); err != nil {
			backoffLayout.err = err
			return
		}
		items := probe.List()
		if len(items) != 1 {
			backoffLayout.err = fmt.Errorf("backoff layout probe stored %d items", len(items))
			return
		}
		got := reflect.TypeOf(items[0])
		if got.Kind() != reflect.Pointer || got.Elem().Name() != "backoffRecord" {
			backoffLayout.err = fmt.Errorf("upstream backoff store holds %v, expected *backoffRecord", got)
			return
		}
		g := got.Elem()
		if g.NumField() != want.NumField() || g.Size() != want.Size() {
			backoffLayout.err = fmt.Errorf("upstream backoffRecord layout changed: %v", g)
			return
		}
		for i := 0; i < g.NumField(); i++ {
			gf, wf := g.Field(i), want.Field(i)
			if gf.Name != wf.Name || gf.Type != wf.Type || gf.Offset != wf.Offset {
				backoffLayout.err = fmt.Errorf("upstream backoffRecord field %d is %s %v, expected %s %v", i, gf.Name, gf.Type, wf.Name, wf.Type)
				return
			}
		}
	})
	return backoffLayout.err
}

// readBackoffRecord returns the controller's stored backoff record for key.
func readBackoffRecord(jm *job.Controller, key string) (backoffRecordMirror, bool) {
	_, store := backoffStoreOf(jm)
	obj, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return backoffRecordMirror{}, false
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Type().Elem().Name() != "backoffRecord" {
		panic(fmt.Sprintf("upstream backoff store holds %T", obj))
	}
	return *(*backoffRecordMirror)(v.UnsafePointer()), true
}
