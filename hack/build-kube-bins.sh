#!/usr/bin/env bash
# Builds the real control-plane binaries used by the end-to-end tests
# (kube-apiserver, etcd, etcdctl) from the Go modules pinned in
# hack/kube-bins/go.mod, and caches them in a directory keyed by the sha256
# of hack/kube-bins/go.sum:
#
#   ${KUBEBRIDGE_BIN_CACHE:-$HOME/.cache/kubebridge}/kube-bins/<hash[:16]>/
#
# The build is skipped when all three binaries are already there. Progress
# goes to stderr; the ONLY thing written to stdout is the bin directory, so
#
#   KUBEBRIDGE_KUBE_BINS=$(bash hack/build-kube-bins.sh)
#
# works from a Makefile. Binaries are built into a temporary directory next
# to the final one and renamed into place, so an interrupted build never
# leaves a half-populated cache directory behind.
#
# A cold build takes ~10 minutes on 2 cores and peaks at ~2.5 GB RSS.
set -euo pipefail

log() { printf '%s\n' "build-kube-bins: $*" >&2; }

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
mod_dir="${script_dir}/kube-bins"
bins=(kube-apiserver etcd etcdctl)

[[ -f "${mod_dir}/go.sum" ]] || { log "missing ${mod_dir}/go.sum"; exit 1; }

hash=$(sha256sum "${mod_dir}/go.sum" | cut -c1-16)
cache_root="${KUBEBRIDGE_BIN_CACHE:-${HOME:?HOME is not set}/.cache/kubebridge}/kube-bins"
bin_dir="${cache_root}/${hash}"

complete() {
	local dir=$1 b
	for b in "${bins[@]}"; do
		[[ -x "${dir}/${b}" ]] || return 1
	done
}

if complete "${bin_dir}"; then
	log "using cached binaries in ${bin_dir}"
	printf '%s\n' "${bin_dir}"
	exit 0
fi

mkdir -p "${cache_root}"

# Serialise concurrent invocations (e.g. parallel make jobs) so that only
# one of them pays for the build; the others then hit the cache.
if command -v flock >/dev/null 2>&1; then
	exec 9>"${cache_root}/.lock"
	if ! flock -n 9; then
		log "another build is running; waiting for ${cache_root}/.lock"
		flock 9
	fi
	if complete "${bin_dir}"; then
		log "using cached binaries in ${bin_dir}"
		printf '%s\n' "${bin_dir}"
		exit 0
	fi
	# Holding the lock, any temp dir left behind is from a killed build.
	rm -rf -- "${cache_root}"/.tmp-*
fi

command -v go >/dev/null 2>&1 || { log "go is not on PATH"; exit 1; }

tmp_dir=$(mktemp -d "${cache_root}/.tmp-${hash}.XXXXXX")
cleanup() { rm -rf -- "${tmp_dir}"; }
trap cleanup EXIT

cd "${mod_dir}"
# Never let a go.work in a parent directory pull in the root module.
export GOWORK=off
export CGO_ENABLED=0

kube_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
if [[ ! "${kube_version}" =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
	log "cannot parse k8s.io/kubernetes version ${kube_version}"
	exit 1
fi
kube_major=${BASH_REMATCH[1]}
kube_minor=${BASH_REMATCH[2]}

kube_ldflags="-s -w"
kube_ldflags+=" -X k8s.io/component-base/version.gitVersion=${kube_version}"
kube_ldflags+=" -X k8s.io/component-base/version.gitMajor=${kube_major}"
kube_ldflags+=" -X k8s.io/component-base/version.gitMinor=${kube_minor}"
kube_ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

start=${SECONDS}

log "downloading modules…"
go mod download >&2

log "building kube-apiserver ${kube_version} (first build takes ~10 min)…"
go build -trimpath -ldflags "${kube_ldflags}" \
	-o "${tmp_dir}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2

log "building etcd ${etcd_version}…"
go build -trimpath -ldflags "-s -w" \
	-o "${tmp_dir}/etcd" go.etcd.io/etcd/server/v3 >&2

log "building etcdctl ${etcd_version}…"
go build -trimpath -ldflags "-s -w" \
	-o "${tmp_dir}/etcdctl" go.etcd.io/etcd/etcdctl/v3 >&2

# Sanity-check the results before publishing them to the cache.
if ! "${tmp_dir}/kube-apiserver" --version 2>&1 | grep -qF "${kube_version}"; then
	log "kube-apiserver --version does not report ${kube_version}"
	exit 1
fi
"${tmp_dir}/etcd" --version >/dev/null
"${tmp_dir}/etcdctl" version >/dev/null

# Publish atomically. rename(2) onto an existing non-empty directory fails,
# so clear out a stale, incomplete one first.
if [[ -e "${bin_dir}" ]]; then
	rm -rf -- "${bin_dir}"
fi
chmod 0755 "${tmp_dir}"
mv -T -- "${tmp_dir}" "${bin_dir}"
trap - EXIT

log "built in $((SECONDS - start))s: ${bin_dir}"
printf '%s\n' "${bin_dir}"
