package vectors_test

import (
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"job-decider.dev/clients/go/kubejson"
	"job-decider.dev/testkit/vectors"
)

// This test of the public kubejson package reads the vectors, which only the
// harnesses' module (this one) carries; it moved here with them.

// TestEveryPlannedObjectConverts: every status, pod variable and owner
// reference the shared vectors' plans hold converts strictly into its
// client-go type, as the shim applies them, and back to the same message.
func TestEveryPlannedObjectConverts(t *testing.T) {
	var files []string
	for _, dir := range []string{"vectors", "vectors-extended"} {
		fs, err := vectors.FilesFlat([]string{filepath.Join("..", "..", "tests", dir)})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	statuses, others := 0, 0
	roundTrip := func(name string, msg proto.Message, obj any) {
		if err := kubejson.ToKube(msg, obj); err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		back := msg.ProtoReflect().New().Interface()
		if err := kubejson.FromKube(obj, back); err != nil {
			t.Errorf("%s: back: %v", name, err)
		} else if !proto.Equal(back, msg) {
			t.Errorf("%s: back %v, was %v", name, back, msg)
		}
	}
	for _, f := range files {
		v, err := vectors.LoadJob(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range v.Expected.GetActions() {
			if st := a.GetUpdateStatus().GetStatus(); st != nil {
				statuses++
				roundTrip(v.Name+": status", st, &batchv1.JobStatus{})
			}
			for _, pc := range a.GetCreatePods().GetPods() {
				for _, e := range pc.GetEnv() {
					others++
					roundTrip(v.Name+": env "+e.GetName(), e, &corev1.EnvVar{})
				}
				if r := pc.GetOwnerReference(); r != nil {
					others++
					roundTrip(v.Name+": ownerReference", r, &metav1.OwnerReference{})
				}
			}
		}
	}
	if statuses < 50 || others < 50 {
		t.Fatalf("%d statuses and %d env vars and owner references converted: fewer than the vectors hold", statuses, others)
	}
	t.Logf("%d vectors: %d statuses, %d env vars and owner references", len(files), statuses, others)
}
