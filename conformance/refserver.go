package main

// reference-server: a DecideJob server whose answers are upstream's own
// (the runner in upstream.go). It exists to test the harness end to end
// (`check --serve ./bin/conformance --serve-args "reference-server --listen {addr}"`
// must find no mismatch) and as a reference for client tests. Loopback only.

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"

	pb "job-decider.dev/clients/go/jobdecider/v1"
	"job-decider.dev/conformance/internal/refserver"
)

func cmdReferenceServer(args []string) error {
	fs := flag.NewFlagSet("reference-server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on")
	tamper := fs.Bool("tamper", false, "answer wrongly on purpose (harness self-test)")
	fs.Parse(args)
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("reference-server listens on loopback addresses only, not %q", host)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "reference-server listening on %s\n", l.Addr())
	s := grpc.NewServer(grpc.MaxRecvMsgSize(256<<20), grpc.MaxSendMsgSize(256<<20))
	pb.RegisterJobDeciderServer(s, refserver.Server{Tamper: *tamper})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() { <-sig; s.GracefulStop() }()
	return s.Serve(l)
}
