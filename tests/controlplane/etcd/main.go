// Command etcd is a thin wrapper around etcd's own entry point, so the test
// control plane can build etcd v3.6 from the Go module proxy (etcd's server
// module has replace directives, so `go install` of it is refused).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
