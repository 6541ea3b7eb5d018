#!/usr/bin/env bash
# Re-pin the control plane to the newest patch releases (or to given versions) and
# regenerate kube/go.mod, kube/go.sum, etcd/go.mod and etcd/go.sum. Commit all four.
#
# Usage: update-gomod.sh [K8S_VERSION [ETCD_VERSION]]   e.g. update-gomod.sh v1.35.4 v3.6.16
#
# Why a generated replace block: k8s.io/kubernetes requires its staging modules
# (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and replaces them with local
# directories, which a consumer cannot see; each must be replaced by its published
# v0.<minor>.<patch> tag instead (kubernetes/kubernetes#79384).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v go >/dev/null || { echo "update-gomod.sh: Go is not on PATH" >&2; exit 2; }

newest() { # newest version of module $1 whose tag starts with $2
    go list -m -versions "$1" | tr ' ' '\n' | grep -E "^$2[0-9]+$" | sort -V | tail -1
}

k8s="${1:-$(newest k8s.io/kubernetes 'v1\.35\.')}"
etcd="${2:-$(newest go.etcd.io/etcd/server/v3 'v3\.6\.')}"
staging="v0.${k8s#v1.}"
echo "pinning Kubernetes $k8s (staging $staging) and etcd $etcd" >&2

upstream_mod="$(go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
[[ -f "$upstream_mod" ]] || { echo "update-gomod.sh: cannot fetch go.mod of k8s.io/kubernetes@$k8s" >&2; exit 1; }

cd "$here/kube"
{
    echo "// Pins the Kubernetes control-plane binaries (kube-apiserver, kube-scheduler, kube-controller-manager) used by the tests."
    echo "// Regenerate with tests/controlplane/update-gomod.sh; build with tests/controlplane/build.sh."
    echo "module policyscheduler.test/controlplane/kube"
    echo
    echo "go 1.25.0"
    echo
    echo "godebug default=go1.25"
    echo
    echo "require k8s.io/kubernetes $k8s"
    echo
    echo "replace ("
    grep '=> ./staging/src/k8s.io/' "$upstream_mod" | awk -v v="$staging" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
} >go.mod
rm -f go.sum
go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$k8s" "k8s.io/kubernetes/cmd/kube-scheduler@$k8s" \
    "k8s.io/kubernetes/cmd/kube-controller-manager@$k8s"
go mod tidy

cd "$here/etcd"
cat >go.mod <<EOF
// Pins the etcd server used by the test control plane (see ../build.sh).
module policyscheduler.test/controlplane/etcd

go 1.25.0

require go.etcd.io/etcd/server/v3 $etcd
EOF
rm -f go.sum
go mod tidy
echo "done; now run build.sh and commit tests/controlplane/{kube,etcd}/go.{mod,sum}" >&2
