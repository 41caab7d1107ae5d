// Command kubectl is kubectl itself, built from its Go module (k8s.io/kubectl,
// pinned in ../go.mod) so that the end-to-end tests can run job-decider as a
// kubectl plugin without downloading a kubectl binary.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
