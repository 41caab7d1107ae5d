// Quickstart: decide a Job from `kubectl get -o json` files on a running job-decider.
//
//	go run ./examples/quickstart job.json pods.json
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"job-decider.dev/clients/go/jobdecider"
	"job-decider.dev/clients/go/request"
)

func main() {
	addr := cmp.Or(os.Getenv("JOB_DECIDER_ADDR"), "127.0.0.1:50051")
	if len(os.Args) != 3 {
		log.Fatal("usage: quickstart JOB.json PODS.json")
	}
	var job batchv1.Job
	var pods corev1.PodList
	readJSON(os.Args[1], &job)
	readJSON(os.Args[2], &pods)
	var podPtrs []*corev1.Pod
	for i := range pods.Items {
		podPtrs = append(podPtrs, &pods.Items[i])
	}
	req := request.BuildFull(&job, podPtrs)
	req.Now = timestamppb.Now()

	// host:port, dns:///host:port or unix:///path.sock; retries UNAVAILABLE,
	// a 10 s deadline unless the context has one. For TLS from a mounted
	// cert-manager Secret: creds, err := jobdecider.TLSFromDir("/etc/job-decider/tls")
	// and jobdecider.NewClient(addr, grpc.WithTransportCredentials(creds)).
	client, err := jobdecider.NewClient(addr)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	resp, err := client.DecideJob(context.Background(), req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		for _, v := range jobdecider.FieldViolations(err) {
			fmt.Fprintf(os.Stderr, "  %s: %s\n", v.GetField(), v.GetDescription())
		}
		if info := jobdecider.ErrorInfo(err); info != nil {
			fmt.Fprintf(os.Stderr, "  reason: %s (%s)\n", info.GetReason(), info.GetDomain())
		}
		os.Exit(1)
	}
	for _, action := range resp.GetActions() {
		line, _ := protojson.Marshal(action) // one action a line, proto3 JSON
		fmt.Println(string(line))
	}
}

func readJSON(path string, into any) {
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, into)
	}
	if err != nil {
		log.Fatalf("%s: %v", path, err)
	}
}
