// Command etcd is etcd's own server entry point, built from the
// go.etcd.io/etcd/server/v3 module so the tests need no release archive.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
