package main

import (
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.controllerName != "job-decider.dev/shim" || !o.leaderElect || o.leNamespace == "" || o.leIdentity == "" {
		t.Errorf("defaults %+v", o)
	}
	if o.podBatch != time.Second || o.retryBase != time.Second || o.retryMax != time.Minute {
		t.Errorf("delays %+v", o)
	}
	// A hung decider holds a worker this long per call (issue 23 hole 7).
	if o.decideTimeout != 5*time.Second {
		t.Errorf("decide timeout %s, want 5s", o.decideTimeout)
	}
}

func TestParseFlagsRejectsHalfAClientCertificate(t *testing.T) {
	if _, err := parseFlags([]string{"--decider-cert=c.pem"}); err == nil {
		t.Error("--decider-cert without --decider-key accepted")
	}
	if _, err := parseFlags([]string{"extra"}); err == nil {
		t.Error("positional argument accepted")
	}
}

func TestDialDeciderTLSNeedsReadableFiles(t *testing.T) {
	o, err := parseFlags([]string{"--decider-ca=/nonexistent/ca.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialDecider(o); err == nil {
		t.Error("a missing CA file was accepted")
	}
	o, _ = parseFlags(nil)
	conn, err := dialDecider(o)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}
