#!/usr/bin/env bash
# Creates the TLS Secrets of deploy/kustomize/overlays/with-nats, signed by
# a fresh CA of their own, in namespace $1 (default kubebridge), creating
# the namespace if it does not exist yet. The same Secrets, by name and by
# keys (tls.crt, tls.key, ca.crt; type kubernetes.io/tls), as
# deploy/kustomize/components/cert-manager has cert-manager write:
#
#   kubebridge-nats-ca          the CA (its key signs the others)
#   nats-server-tls             the servers' client port 4222: nats, nats.<ns>[.svc[.cluster.local]],
#                               *.nats-headless[...], localhost, 127.0.0.1
#   nats-routes-tls             the routes 6222, both ends (mutual TLS): *.nats-headless[...]
#   kubebridge-nats-tls         the bridge's client certificate (CN kubebridge)
#   kubebridge-nats-reader-tls  a client certificate for readers (CN reader)
#
# A Secret that already exists is left as it is; a missing one is signed by
# the existing CA (so rerun it after deleting a Secret to renew it). Uses
# openssl, and kubectl with your current context.
#
#   hack/nats-certs.sh --out-dir DIR [namespace]
#
# writes the Secrets as DIR/<name>.yaml (and their files as
# DIR/<name>/<key>) instead of creating them, without kubectl: for
# `kubectl apply -f DIR`, GitOps, or tests. Existing files count as
# existing Secrets.
set -euo pipefail

out=
if [[ ${1:-} == --out-dir ]]; then
	out=${2:?--out-dir needs a directory}
	shift 2
fi
ns=${1:-kubebridge}
ca=kubebridge-nats-ca
days=365
ca_days=3650

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077

# exists NAME: the Secret is there already.
exists() {
	if [[ -n $out ]]; then
		[[ -f $out/$1.yaml ]]
	else
		kubectl -n "$ns" get secret "$1" >/dev/null 2>&1
	fi
}

# fetch NAME KEY FILE: writes the Secret's key to FILE.
fetch() {
	if [[ -n $out ]]; then
		cp "$out/$1/$2" "$3"
	else
		kubectl -n "$ns" get secret "$1" -o "jsonpath={.data.${2//./\\.}}" | base64 -d >"$3"
	fi
}

# store NAME DIR: makes Secret NAME of the files tls.crt, tls.key and
# ca.crt in DIR.
store() {
	local name=$1 dir=$2 manifest
	manifest=$(
		printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\n' "$name" "$ns"
		printf '  labels:\n    app.kubernetes.io/part-of: kubebridge\ntype: kubernetes.io/tls\ndata:\n'
		for key in tls.crt tls.key ca.crt; do
			printf '  %s: %s\n' "$key" "$(base64 -w0 <"$dir/$key")"
		done
	)
	if [[ -n $out ]]; then
		mkdir -p "$out/$name"
		cp "$dir/tls.crt" "$dir/tls.key" "$dir/ca.crt" "$out/$name/"
		printf '%s\n' "$manifest" >"$out/$name.yaml"
		echo "wrote $out/$name.yaml"
	else
		printf '%s\n' "$manifest" | kubectl create -f -
	fi
}

# newkey FILE: a P-256 key.
newkey() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"
}

if [[ -n $out ]]; then
	mkdir -p "$out"
else
	kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns"
fi

mkdir "$work/ca"
if exists "$ca"; then
	echo "secret/$ca already exists in $ns: signing with it"
	fetch "$ca" tls.crt "$work/ca/tls.crt"
	fetch "$ca" tls.key "$work/ca/tls.key"
else
	for leaf in nats-server-tls nats-routes-tls kubebridge-nats-tls kubebridge-nats-reader-tls; do
		if exists "$leaf"; then
			echo "secret/$leaf exists in $ns, but not the CA that signed it ($ca): delete it, or restore the CA" >&2
			exit 1
		fi
	done
	newkey "$work/ca/tls.key"
	openssl req -x509 -new -key "$work/ca/tls.key" -out "$work/ca/tls.crt" -days "$ca_days" \
		-subj "/O=kubebridge/CN=kubebridge NATS CA" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
	cp "$work/ca/tls.crt" "$work/ca/ca.crt"
	store "$ca" "$work/ca"
fi

# The DNS names of a Service, from inside and outside its namespace.
names() {
	local svc=$1
	printf 'DNS:%s,DNS:%s.%s,DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local' "$svc" "$svc" "$ns" "$svc" "$ns" "$svc" "$ns"
}
local_names="DNS:localhost,IP:127.0.0.1"

# leaf NAME CN EXTENDED-KEY-USAGE [SANS]: signs and stores one certificate.
leaf() {
	local name=$1 cn=$2 eku=$3 sans=${4:-} dir="$work/$1"
	if exists "$name"; then
		echo "secret/$name already exists in $ns: left as it is"
		return
	fi
	mkdir "$dir"
	newkey "$dir/tls.key"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$eku"
		if [[ -n $sans ]]; then echo "subjectAltName=$sans"; fi
	} >"$dir/ext.cnf"
	openssl req -new -key "$dir/tls.key" -subj "/O=kubebridge/CN=$cn" -out "$dir/tls.csr"
	openssl x509 -req -in "$dir/tls.csr" -CA "$work/ca/tls.crt" -CAkey "$work/ca/tls.key" \
		-set_serial "0x$(openssl rand -hex 16)" -days "$days" -extfile "$dir/ext.cnf" -out "$dir/tls.crt" 2>/dev/null
	cp "$work/ca/tls.crt" "$dir/ca.crt"
	store "$name" "$dir"
}

headless=$(names nats-headless | sed 's/DNS:/DNS:*./g')
leaf nats-server-tls nats serverAuth "$(names nats),$headless,$local_names"
leaf nats-routes-tls nats-route serverAuth,clientAuth "$headless,$local_names"
leaf kubebridge-nats-tls kubebridge clientAuth
leaf kubebridge-nats-reader-tls reader clientAuth
