#!/usr/bin/env bash
# Checks the Kubernetes chart (run by make test, on the host; no cluster:
# nothing is installed or run in Kubernetes). helm lint --strict; helm
# template with the defaults, with contrib/kubernetes/examples/
# runsc-values.yaml and with features turned off; every rendered document
# decoded strictly into the Kubernetes API's Go types (contrib/kubernetes/
# k8sdecode: an unknown field, a wrong type or a selector that selects
# nothing fails); what the chart must render (privileged DaemonSet,
# hostPaths, probes, drain hooks, config, node selectors); the rendered
# config accepted by sandboxd --validate; the sandboxctl commands the pod
# runs exist; values the schema must refuse; and contrib/kubernetes/
# sandboxd.yaml equal to helm template's defaults, so it cannot drift.
#
# helm comes from the Go module proxy, built once into dist/helm/ (about two
# minutes) and reused while its version is HELM_VERSION.
#
# Usage: integration/kubernetes-test.sh
#        integration/kubernetes-test.sh --write-manifest   (regenerates sandboxd.yaml)
set -u
cd "$(dirname "$0")/.." || exit 1
root=$PWD

# helm v3.22.0's go.mod has no replace directives, so go install builds it
# as released. Its Makefile sets the Kubernetes version that lint and
# template assume (the chart's kubeVersion is checked against it) from its
# client-go, v0.37 there: 1.37. Left unset, helm assumes 1.20.
HELM_VERSION=v3.22.0
HELM_KUBE_MAJOR=1
HELM_KUBE_MINOR=37
HELM=$root/dist/helm/helm
DECODE=$root/dist/helm/k8sdecode
chart=contrib/kubernetes/chart/sandboxd
manifest=contrib/kubernetes/sandboxd.yaml
runsc_values=contrib/kubernetes/examples/runsc-values.yaml
python=/usr/bin/python3
[ -x $python ] || python=python3

fails=0
pass() { echo "--- PASS: kubernetes/$1"; }
fail() { echo "--- FAIL: kubernetes/$1: $2"; fails=$((fails + 1)); }
check() { # name, command...
	local name=$1; shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$out"; fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# helm keeps caches and repositories under $HOME otherwise; nothing here
# needs them.
export HELM_CACHE_HOME=$tmp/helm-cache HELM_CONFIG_HOME=$tmp/helm-config HELM_DATA_HOME=$tmp/helm-data

if [ "$("$HELM" version --template '{{.Version}}' 2>/dev/null)" != "$HELM_VERSION" ]; then
	echo "building helm $HELM_VERSION into dist/helm (once)"
	pkg=helm.sh/helm/v3
	if ! GOBIN=$root/dist/helm CGO_ENABLED=0 go install -trimpath -ldflags "-s -w \
		-X $pkg/internal/version.version=$HELM_VERSION \
		-X $pkg/pkg/chartutil.k8sVersionMajor=$HELM_KUBE_MAJOR -X $pkg/pkg/chartutil.k8sVersionMinor=$HELM_KUBE_MINOR \
		-X $pkg/pkg/lint/rules.k8sVersionMajor=$HELM_KUBE_MAJOR -X $pkg/pkg/lint/rules.k8sVersionMinor=$HELM_KUBE_MINOR" \
		$pkg/cmd/helm@$HELM_VERSION; then
		fail "helm" "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed"
		exit 1
	fi
fi

# The generated manifest: its first lines say how it was made.
render_manifest() {
	cat <<-EOF
	# sandboxd on every node: Namespace, ConfigMap and DaemonSet, the chart's
	# defaults (contrib/kubernetes/chart/sandboxd) rendered by helm $HELM_VERSION:
	#   helm template sandboxd contrib/kubernetes/chart/sandboxd --namespace sandboxd --set createNamespace=true
	# Do not edit: change the chart, then integration/kubernetes-test.sh
	# --write-manifest (make test fails while this file differs).
	# The image is yours to build: contrib/kubernetes/Dockerfile.
	EOF
	"$HELM" template sandboxd $chart --namespace sandboxd --set createNamespace=true
}
if [ "${1:-}" = --write-manifest ]; then
	render_manifest >$manifest.tmp && mv $manifest.tmp $manifest && echo "wrote $manifest"
	exit
fi

(cd contrib/kubernetes/k8sdecode && go build -o "$DECODE" .) || { fail "k8sdecode" "build failed"; exit 1; }
go build -o "$tmp/sandboxctl" ./cmd/sandboxctl || { fail "sandboxctl" "build failed"; exit 1; }
# The daemon's --validate reads the config as the daemon does (unknown
# keys, values, runtimes); it needs libseccomp-dev, as make deps installs.
sandboxd_err=$(go build -tags seccomp -o "$tmp/sandboxd" ./cmd/sandboxd 2>&1) || sandboxd_err="cannot build sandboxd (make deps installs what it needs): $sandboxd_err"
[ -x "$tmp/sandboxd" ] || [ -n "$sandboxd_err" ] || sandboxd_err="no sandboxd built"

check "helm version" bash -c "'$HELM' version --template '{{.Version}}' | grep -qx '$HELM_VERSION'"
check "lint --strict" "$HELM" lint --strict $chart
check "lint --strict runsc values" "$HELM" lint --strict $chart -f $runsc_values

# render NAME helm-args...: helm template, then the strict decode into JSON.
render() {
	local name=$1; shift
	if ! "$HELM" template sandboxd $chart --namespace sandboxd "$@" >"$tmp/$name.yaml" 2>"$tmp/$name.err"; then
		fail "$name: template" "$(cat "$tmp/$name.err")"
		return 1
	fi
	check "$name: decodes into the API's types" bash -c "'$DECODE' <'$tmp/$name.yaml' >'$tmp/$name.json'"
}

# q FILE NAME EXPR: the Python expression EXPR holds of FILE's decoded
# objects. Names: docs, kinds, ds (the DaemonSet), pod (its pod spec), c
# (the sandboxd container), e (the e2b container), svc (the Service), cm
# (the ConfigMap's config.toml), vol(path) (the volume mounted at path in
# c; vol(path, e) in e), sh(cmd) (an exec command as one line).
q() {
	check "$2" $python - "$tmp/$1.json" "$3" <<-'PY'
	import hashlib, json, sys
	docs = json.load(open(sys.argv[1]))
	kinds = sorted(d["kind"] for d in docs)
	one = lambda k: next((d for d in docs if d["kind"] == k), {})
	ds = one("DaemonSet")
	pod = ds.get("spec", {}).get("template", {}).get("spec", {})
	c = next((x for x in pod.get("containers", []) if x["name"] == "sandboxd"), {})
	e = next((x for x in pod.get("containers", []) if x["name"] == "e2b"), {})
	svc = one("Service")
	cm = one("ConfigMap").get("data", {}).get("config.toml", "")
	def vol(path, ctr=None):
	    m = next(m for m in (ctr or c).get("volumeMounts", []) if m["mountPath"] == path)
	    return next(v for v in pod["volumes"] if v["name"] == m["name"])
	sh = lambda cmd: " ".join(cmd)
	try:
	    ok = eval(sys.argv[2])
	except Exception as e:
	    ok = False
	    print(type(e).__name__, e)
	if not ok:
	    sys.exit("does not hold: " + sys.argv[2])
	PY
}

# validate NAME [sed-expr]: sandboxd --validate accepts the ConfigMap's config.
validate() {
	if [ ! -x "$tmp/sandboxd" ]; then
		fail "$1: sandboxd --validate" "$sandboxd_err"
		return
	fi
	$python -c 'import json,sys; print(next(d for d in json.load(open(sys.argv[1])) if d["kind"] == "ConfigMap")["data"]["config.toml"], end="")' \
		"$tmp/$1.json" | sed "${2:-}" >"$tmp/$1.toml"
	check "$1: sandboxd --validate${2:+ ($2)}" "$tmp/sandboxd" --config "$tmp/$1.toml" --validate
}

# The commands the pod runs: if sandboxctl renames one, the chart breaks.
check "sandboxctl: probe commands exist" bash -c "'$tmp/sandboxctl' version --help >/dev/null && '$tmp/sandboxctl' health --help >/dev/null"
check "sandboxctl: node drain --wait, --off" bash -c "'$tmp/sandboxctl' node drain --help | grep -q -- '--wait' && '$tmp/sandboxctl' node drain --help | grep -q -- '--off'"
check "sandboxctl: node --format" bash -c "'$tmp/sandboxctl' node --help | grep -q -- '--format'"
check "sandboxctl: e2b serve --listen, --allow-host" bash -c "'$tmp/sandboxctl' e2b serve --help | grep -q -- '--listen' && '$tmp/sandboxctl' e2b serve --help | grep -q -- '--allow-host'"

if render defaults; then
	q defaults "defaults: a ConfigMap and a DaemonSet" 'kinds == ["ConfigMap", "DaemonSet"]'
	q defaults "defaults: privileged" 'c["securityContext"]["privileged"] is True'
	q defaults "defaults: no hostPID, hostNetwork" 'not pod.get("hostPID") and not pod.get("hostNetwork")'
	q defaults "defaults: runs the packaged daemon with the config" 'c["command"] == ["/usr/bin/sandboxd", "--config", "/etc/sandboxd/config.toml"] and vol("/etc/sandboxd")["configMap"]["name"] == one("ConfigMap")["metadata"]["name"]'
	q defaults "defaults: socket dir is the node's" 'vol("/run/sandboxd")["hostPath"] == {"path": "/run/sandboxd", "type": "DirectoryOrCreate"} and "/run/sandboxd/sandboxd.sock" in cm'
	q defaults "defaults: data dir is the node's" 'vol("/var/lib/sandboxd")["hostPath"]["path"] == "/var/lib/sandboxd"'
	q defaults "defaults: id leases and /dev are the node's" 'vol("/run/sandboxd-ids")["hostPath"]["path"] == "/run/sandboxd-ids" and vol("/dev")["hostPath"] == {"path": "/dev", "type": "Directory"}'
	q defaults "defaults: no termination message file in the node's /dev" 'not c["terminationMessagePath"].startswith("/dev/")'
	q defaults "defaults: the node's cgroup tree is not mounted" 'not any(v.get("hostPath", {}).get("path", "").startswith("/sys") for v in pod["volumes"])'
	q defaults "defaults: lxcfs from the node, propagated" 'next(m for m in c["volumeMounts"] if m["mountPath"] == "/var/lib/lxcfs")["mountPropagation"] == "HostToContainer"'
	q defaults "defaults: readiness execs sandboxctl health" 'c["readinessProbe"]["exec"]["command"] == ["sandboxctl", "health", "-q"]'
	q defaults "defaults: liveness execs sandboxctl version" 'c["livenessProbe"]["exec"]["command"] == ["sandboxctl", "version"]'
	q defaults "defaults: liveness and startup exec sandboxctl" 'c["livenessProbe"]["exec"]["command"][0] == "sandboxctl" and c["startupProbe"]["exec"]["command"][0] == "sandboxctl"'
	q defaults "defaults: preStop drains and waits" '"exec timeout 3600 sandboxctl node drain --wait" in sh(c["lifecycle"]["preStop"]["exec"]["command"])'
	q defaults "defaults: postStart undoes the preStop drain" '"sandboxctl node drain --off" in sh(c["lifecycle"]["postStart"]["exec"]["command"]) and ".drained-by-prestop" in sh(c["lifecycle"]["preStop"]["exec"]["command"])'
	q defaults "defaults: grace covers the idle timeout" 'pod["terminationGracePeriodSeconds"] == 3660 and "idle_timeout_s = 3600" in cm'
	q defaults "defaults: socket for root alone (the image's gid is not the node's)" '"\nsocket_group = \"\"\n" in cm'
	q defaults "defaults: config in the ConfigMap" 'all(k in cm for k in ("pool_size = 2", "max_sessions = 200", "shutdown_stops_sessions = true", "[node]"))'
	q defaults "defaults: config checksum on the pod" 'ds["spec"]["template"]["metadata"]["annotations"]["checksum/config"] == hashlib.sha256(cm.encode()).hexdigest()'
	q defaults "defaults: one node at a time" 'ds["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}'
	q defaults "defaults: no service account token" 'pod["automountServiceAccountToken"] is False and "serviceAccountName" not in pod'
	q defaults "defaults: linux nodes, no runsc label" 'pod["nodeSelector"] == {"kubernetes.io/os": "linux"}'
	q defaults "defaults: node-critical" 'pod["priorityClassName"] == "system-node-critical"'
	q defaults "defaults: image without a registry host" 'c["image"] == "sandboxd:0.1.0" and "/" not in c["image"]'
	q defaults "defaults: node_id from the node name" 'pod["initContainers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName" and "/var/lib/sandboxd/node_id" in sh(pod["initContainers"][0]["command"])'
	q defaults "defaults: no memory or CPU limit on the sessions' cgroup" '"limits" not in c["resources"]'
	q defaults "defaults: no E2B gateway" 'not e and not svc and len(pod["containers"]) == 1'
	validate defaults
fi

if render runsc -f $runsc_values; then
	q runsc "runsc: nodeSelector applied" 'pod["nodeSelector"] == {"kubernetes.io/os": "linux", "sandboxd.io/pool": "sandboxes", "sandboxd.io/runsc": "true"}'
	q runsc "runsc: tolerations applied" 'pod["tolerations"][0]["key"] == "sandboxd.io/dedicated"'
	q runsc "runsc: config in the ConfigMap" '"default_runtime = \"runsc\"" in cm and "strict_runtime = true" in cm'
	q runsc "runsc: drain wait follows the grace" 'pod["terminationGracePeriodSeconds"] == 1860 and "timeout 1800 " in sh(c["lifecycle"]["preStop"]["exec"]["command"])'
	# strict_runtime refuses to validate where runsc is missing: then the
	# rest of the file is checked without it.
	if command -v runsc >/dev/null; then validate runsc; else validate runsc 's/^strict_runtime = true/strict_runtime = false/'; fi
fi

if render selector --set 'runtimes={runsc}' --set 'nodeSelector.zone=eu-1a' --set 'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=gpu' --set 'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=DoesNotExist'; then
	q selector "selector: user's and runsc's labels, affinity" 'pod["nodeSelector"] == {"kubernetes.io/os": "linux", "zone": "eu-1a", "sandboxd.io/runsc": "true"} and "nodeAffinity" in pod["affinity"]'
fi

if render off --set drain.enabled=false --set lxcfs.enabled=false --set nodeIdFromNodeName=false --set priorityClassName= --set createNamespace=true --set image.repository=registry.example/team/sandboxd --set image.tag=1.2.3; then
	q off "off: no hooks, no lxcfs, no init container" '"lifecycle" not in c and "initContainers" not in pod and not any(m["mountPath"] == "/var/lib/lxcfs" for m in c["volumeMounts"])'
	q off "off: a Namespace that allows privileged pods" 'kinds == ["ConfigMap", "DaemonSet", "Namespace"] and one("Namespace")["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"'
	q off "off: image and tag as given" 'c["image"] == "registry.example/team/sandboxd:1.2.3" and "priorityClassName" not in pod'
fi

if render e2b --set e2b.enabled=true --set e2b.port=3100 --set 'e2b.allowHosts={e2b.example}' --set 'e2b.args={--network,open}'; then
	q e2b "e2b: a Service beside the DaemonSet" 'kinds == ["ConfigMap", "DaemonSet", "Service"]'
	q e2b "e2b: serves on the port, for the Service's names and allowHosts" '"sandboxctl e2b serve --listen 0.0.0.0:3100 " in sh(e["command"]) and all("--allow-host " + h in sh(e["command"]) for h in ("sandboxd-e2b", "sandboxd-e2b.sandboxd.svc", "e2b.example")) and sh(e["command"]).endswith("--network open")'
	q e2b "e2b: waits for the daemon, then execs the gateway" 'e["command"][:2] == ["/bin/sh", "-c"] and "sandboxctl version" in e["command"][2] and "exec \"$@\"" in e["command"][2]'
	q e2b "e2b: the daemon's socket folder, its own state on the node" 'vol("/run/sandboxd", e) == vol("/run/sandboxd") and vol("/var/lib/sandboxd-e2b", e)["hostPath"]["path"] == "/var/lib/sandboxd-e2b" and {"name": "SANDBOXD_E2B_STATE", "value": "/var/lib/sandboxd-e2b"} in e["env"]'
	q e2b "e2b: not privileged, no capability" '"privileged" not in e["securityContext"] and e["securityContext"]["capabilities"]["drop"] == ["ALL"] and e["securityContext"]["allowPrivilegeEscalation"] is False'
	q e2b "e2b: the Service reaches the container's port, on the client's node" 'svc["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items() and svc["spec"]["ports"][0]["port"] == 3100 and svc["spec"]["ports"][0]["targetPort"] == "e2b" and e["ports"][0] == {"name": "e2b", "containerPort": 3100, "protocol": "TCP"} and svc["spec"]["internalTrafficPolicy"] == "Local"'
fi

# refused NAME helm-args...: helm template must fail.
refused() {
	local name=$1; shift
	if "$HELM" template sandboxd $chart "$@" >/dev/null 2>&1; then fail "refused: $name" "helm template $* succeeded"; else pass "refused: $name"; fi
}
refused "maxSurge (two pods on one node)" --set updateStrategy.rollingUpdate.maxSurge=1
refused "a grace shorter than the reserve" --set terminationGracePeriodSeconds=30
refused "an unknown runtime" --set 'runtimes={kata}'
refused "an unknown value" --set imageRepository=x
refused "an empty image repository" --set image.repository=
refused "an e2b port out of range" --set e2b.enabled=true --set e2b.port=70000
refused "an unknown e2b value" --set e2b.listen=x

render_manifest >"$tmp/manifest.yaml" 2>&1
check "sandboxd.yaml is helm template's defaults" diff -u $manifest "$tmp/manifest.yaml"
check "sandboxd.yaml decodes into the API's types" bash -c "'$DECODE' <$manifest | $python -c 'import json,sys; k = sorted(d[\"kind\"] for d in json.load(sys.stdin)); sys.exit(k != [\"ConfigMap\", \"DaemonSet\", \"Namespace\"])'"

echo "kubernetes tests: $fails failed"
[ $fails -eq 0 ]
