// Command conformance runs upstream Kubernetes' Job controller
// (k8s.io/kubernetes/pkg/controller/job at the version pinned in go.mod) on
// job-decider's snapshots and compares its decisions with job-decider's.
//
// Build with -ldflags=-checklinkname=0 (see linkname.go).
//
//	conformance upstream [--feature-gates G=B,...] FILE
//	                                     print upstream's response for a vector's request
//	conformance record FILE|DIR...       write upstream's response into each vector's expected
//	conformance verify FILE|DIR...       check each vector's expected equals upstream's response
//	conformance check (--server ADDR | --serve BIN) FILE|DIR...
//	                                     compare job-decider with upstream on vectors
//	conformance random (--server ADDR | --serve BIN | --upstream-only) --seed S -n N [--lifecycles L]
//	                                     compare on generated snapshots (and multi-sync lifecycles)
//	conformance lifecycle (--server ADDR | --serve BIN | --upstream-only) --seed S -n L [--only I [-v]]
//	                                     compare over multi-sync lifecycles on simulated clusters
//	conformance bench (--server ADDR | --serve BIN)
//	                                     time both sides by job size (informational)
//	conformance reference-server [--listen 127.0.0.1:PORT]
//	                                     serve upstream's own answers over gRPC (tests the harness)
package main

import (
	"fmt"
	"os"
)

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  conformance upstream [--feature-gates G=B,...] FILE
  conformance record FILE|DIR...
  conformance verify FILE|DIR...
  conformance check  (--server ADDR | --serve BIN) [--save-dir DIR] [--known FILE] FILE|DIR...
  conformance random (--server ADDR | --serve BIN | --upstream-only) [--seed S] [-n N] [--lifecycles L]
                     [--only I] [--workers W] [--max-time D] [--save-dir DIR] [--known FILE]
  conformance lifecycle (--server ADDR | --serve BIN | --upstream-only) [--seed S] [-n L] [--only I [-v]]
                     [--workers W] [--max-time D] [--save-dir DIR] [--known FILE]
  conformance bench  (--server ADDR | --serve BIN) [--sizes 10,100,1000,10000]
  conformance reference-server [--listen 127.0.0.1:PORT] [--tamper]

  Every run prints its seed; a failure replays with the same --seed and --only I
  (random: single scenario I; lifecycle: lifecycle I, with a trace of every sync).

  Long runs (bounded by -n and by --max-time, default 1h):
    conformance random --serve target/release/job-decider -n 1000000 --lifecycles 100000 --max-time 10h
    conformance lifecycle --serve target/release/job-decider -n 1000000 --max-time 10h
    N=1000000 L=100000 MAX_TIME=10h conformance/run.sh target/release/job-decider
  (--serve-args or JOB_DECIDER_SERVE_ARGS give the server's arguments; {addr} is the port.)
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "upstream":
		err = cmdUpstream(os.Args[2:])
	case "record":
		err = cmdRecord(os.Args[2:])
	case "verify":
		err = cmdVerify(os.Args[2:])
	case "check":
		err = cmdCheck(os.Args[2:])
	case "random":
		err = cmdRandom(os.Args[2:])
	case "lifecycle":
		err = cmdLifecycle(os.Args[2:])
	case "bench":
		err = cmdBench(os.Args[2:])
	case "reference-server":
		err = cmdReferenceServer(os.Args[2:])
	case "loadtime":
		err = cmdLoadTime(os.Args[2:])
	case "-h", "--help", "help":
		usage()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}
