#!/usr/bin/env bash
# Creates the two Secrets of deploy/kustomize/overlays/with-nats, with
# random passwords, in namespace $1 (default kubebridge), creating the
# namespace if it does not exist yet:
#
#   kubebridge-nats         user=kubebridge, password=...   the bridge (NATS_USER, NATS_PASSWORD)
#   kubebridge-nats-reader  user=reader,     password=...   readers of the stream
#
# The NATS servers check the same passwords (nats.conf). A Secret that
# already exists is left as it is. Uses kubectl and your current context.
set -euo pipefail
ns=${1:-kubebridge}

kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns"
for pair in kubebridge-nats:kubebridge kubebridge-nats-reader:reader; do
	secret=${pair%%:*}
	user=${pair##*:}
	if kubectl -n "$ns" get secret "$secret" >/dev/null 2>&1; then
		echo "secret/$secret already exists in $ns: left as it is"
		continue
	fi
	password=$(head -c 32 /dev/urandom | base64 | tr -d '/+=\n')
	kubectl -n "$ns" create secret generic "$secret" \
		--from-literal=user="$user" --from-literal=password="$password"
done
