// CoreDNS with only the plugins a real node's cluster.local needs (upstream's coredns.go links
// every plugin through core/plugin, cloud DNS clients included): kubernetes answers from the API
// server, bind listens on the nodes' bridge gateways only, cache, errors, health and ready. No
// forward plugin: nothing is sent upstream, a name outside cluster.local gets SERVFAIL.
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
