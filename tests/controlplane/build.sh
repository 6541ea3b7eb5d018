#!/usr/bin/env bash
# Build the test control plane (etcd, kube-apiserver, kube-scheduler, and
# kube-controller-manager for the storage tests' PV binder) from the Go
# modules pinned in tests/controlplane/{kube,etcd}/go.mod.
#
# Output: ${POLICYSCHEDULER_CACHE:-~/.cache/policyscheduler}/controlplane/k8s-<v>-etcd-<v>/bin
# Idempotent: a stamp (hash of go.mod/go.sum, build flags and the Go version) is
# written next to the binaries; a second run with the same inputs does nothing.
#
# Usage: build.sh            build (or reuse) and print the bin directory last
#        build.sh --bin-dir  only print the bin directory it would use
#        build.sh --force    rebuild even when the stamp matches
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kube_mod="$here/kube"
etcd_mod="$here/etcd"

k8s_version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$kube_mod/go.mod")"
etcd_version="$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' "$etcd_mod/go.mod")"
if [[ -z "$k8s_version" || -z "$etcd_version" ]]; then
    echo "build.sh: cannot read the pinned versions from $kube_mod/go.mod and $etcd_mod/go.mod" >&2
    exit 2
fi

cache_root="${POLICYSCHEDULER_CACHE:-$HOME/.cache/policyscheduler}"
out_dir="$cache_root/controlplane/k8s-$k8s_version-etcd-$etcd_version"
bin_dir="$out_dir/bin"
binaries=(etcd kube-apiserver kube-scheduler kube-controller-manager)

force=0
case "${1:-}" in
    --bin-dir) echo "$bin_dir"; exit 0 ;;
    --force) force=1 ;;
    "") ;;
    *) echo "usage: $0 [--bin-dir|--force]" >&2; exit 2 ;;
esac

log() { printf '[controlplane %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

if ! command -v go >/dev/null 2>&1; then
    cat >&2 <<'EOF'
build.sh: the Go toolchain ('go') is not on PATH.
The test control plane (etcd, kube-apiserver, kube-scheduler) is built from Go
modules and needs Go >= 1.26: install it from https://go.dev/dl/ and make sure
'go version' works, then run this again.
EOF
    exit 2
fi

export CGO_ENABLED=0
# Two parallel compile jobs: the machine (and CI runners) have two cores.
jobs="${POLICYSCHEDULER_BUILD_JOBS:-2}"
minor="${k8s_version#v1.}"
minor="${minor%%.*}"
kube_ldflags="-s -w -buildid= \
 -X k8s.io/component-base/version.gitVersion=$k8s_version \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean"

go_version="$(go env GOVERSION)"
kube_tags="selinux,notest"
# The stamp covers every input of the build (not log messages): a change to any
# of them rebuilds, anything else reuses the binaries.
stamp_value="$(
    {
        echo "$go_version" "$CGO_ENABLED" "$kube_tags" "$kube_ldflags"
        cat "$kube_mod/go.mod" "$kube_mod/go.sum" "$etcd_mod/go.mod" "$etcd_mod/go.sum" "$etcd_mod/main.go"
    } | sha256sum | cut -d' ' -f1
)"

up_to_date() {
    [[ -f "$out_dir/stamp" && "$(cat "$out_dir/stamp")" == "$stamp_value" ]] || return 1
    local b
    for b in "${binaries[@]}"; do [[ -x "$bin_dir/$b" ]] || return 1; done
}

mkdir -p "$out_dir"
# One build at a time (CI, a pytest fixture and a developer may race).
exec 9>"$out_dir/.lock"
flock 9

if [[ $force == 0 ]] && up_to_date; then
    log "up to date: Kubernetes $k8s_version, etcd $etcd_version ($go_version)"
    echo "$bin_dir"
    exit 0
fi

log "building Kubernetes $k8s_version (kube-apiserver, kube-scheduler) and etcd $etcd_version with $go_version"
log "a cold build takes about 5-10 minutes on 2 cores; later runs reuse the Go build cache"

tmp_bin="$out_dir/bin.tmp.$$"
rm -rf "$tmp_bin"
mkdir -p "$tmp_bin"
trap 'rm -rf "$tmp_bin"' EXIT

start=$SECONDS
log "downloading modules (skipped when already in GOMODCACHE)"
(cd "$kube_mod" && go mod download)
(cd "$etcd_mod" && go mod download)

log "go build etcd $etcd_version"
(cd "$etcd_mod" && go build -p "$jobs" -trimpath -ldflags "-s -w -buildid=" -o "$tmp_bin/etcd" .)
log "etcd done after $((SECONDS - start))s"

log "go build kube-apiserver, kube-scheduler and kube-controller-manager $k8s_version"
(cd "$kube_mod" && go build -p "$jobs" -trimpath -tags "$kube_tags" -ldflags "$kube_ldflags" \
    -o "$tmp_bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager)
log "kubernetes done after $((SECONDS - start))s"

for b in "${binaries[@]}"; do
    [[ -x "$tmp_bin/$b" ]] || { echo "build.sh: $b was not produced" >&2; exit 1; }
done
rm -rf "$bin_dir"
mv "$tmp_bin" "$bin_dir"
echo "$stamp_value" >"$out_dir/stamp"
log "built in $((SECONDS - start))s into $bin_dir"
echo "$bin_dir"
