package main

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// What the parent passes a child, in arguments and in its environment,
// is the child protocol: an older build run by +exe= reads the same, so
// none is renamed or dropped.
func TestChildArgsAndEnvAreTheProtocol(t *testing.T) {
	exe := versusBinary(t)
	dir := t.TempDir()
	b := &bench{kubeconfig: "/kc", settle: 2 * time.Second, scrapeEvery: 15 * time.Second, memLimit: "256MiB",
		profiles: filepath.Join(dir, "heap"), cpuProfiles: filepath.Join(dir, "cpu"),
		layout: layout{namespaces: 3, named: true}, churn: churnOptions{mix: churnMix{updates: 10}}}
	for _, tc := range []struct {
		modes string
		args  []string
		env   []string
	}{
		{
			modes: "bridge-shard@1/2+nogzip+gogc=50+procs=2+linger=5ms+exe=" + exe,
			args: []string{"child", "bridge-shard", "-kubeconfig", "/kc", "-nats", "nats://n", "-settle", "2s",
				"-stream", "VERSUS_BRIDGE_SHARD_1_2_NOGZIP_GOGC_50_PROCS_2_LINGER_5MS_EXE_VERSUS_OLD",
				"-namespaces", "3", "-shard", "1/2", "-scrape-interval", "15s", "-named-namespaces", "-no-gzip", "-wait"},
			env: []string{"GOMEMLIMIT=256MiB", "GOGC=50", "GOMAXPROCS=2", "BRIDGE_PUBLISH_LINGER=5ms", "BRIDGE_KUBE_COMPRESSION=false"},
		},
		{
			modes: "bridge-typed@8Mi+gzip",
			args: []string{"child", "bridge-typed", "-kubeconfig", "/kc", "-nats", "nats://n", "-settle", "2s", "-stream", "VERSUS_BRIDGE_TYPED_8MI_GZIP",
				"-namespaces", "3", "-shard", "0/1", "-scrape-interval", "15s", "-budget", "8Mi", "-named-namespaces", "-wait"},
			env: []string{"GOMEMLIMIT=256MiB", "BRIDGE_KUBE_COMPRESSION=true"},
		},
		{
			// CBOR is client-go's gates, in the environment.
			modes: "bridge-crd+cbor",
			args: []string{"child", "bridge-crd", "-kubeconfig", "/kc", "-nats", "nats://n", "-settle", "2s", "-stream", "VERSUS_BRIDGE_CRD_CBOR",
				"-namespaces", "3", "-shard", "0/1", "-scrape-interval", "15s", "-named-namespaces", "-wait"},
			env: []string{"GOMEMLIMIT=256MiB", "KUBE_FEATURE_ClientsAllowCBOR=true", "KUBE_FEATURE_ClientsPreferCBOR=true"},
		},
		{
			// An informer's gzip is its client's: no bridge variable.
			modes: "typed+nogzip",
			args: []string{"child", "typed", "-kubeconfig", "/kc", "-nats", "nats://n", "-settle", "2s", "-stream", "VERSUS_TYPED_NOGZIP",
				"-namespaces", "3", "-shard", "0/1", "-scrape-interval", "15s", "-named-namespaces", "-no-gzip", "-wait"},
			env: []string{"GOMEMLIMIT=256MiB"},
		},
	} {
		ms, err := selectModes(tc.modes)
		if err != nil {
			t.Fatal(err)
		}
		m := ms[0]
		args := b.childArgs(m, "nats://n")
		if !slices.Equal(args, tc.args) {
			t.Errorf("%s: args\n%q, want\n%q", tc.modes, args, tc.args)
		}
		if env := b.childEnv(m); !slices.Equal(env, tc.env) {
			t.Errorf("%s: env %q, want %q", tc.modes, env, tc.env)
		}
		profiles, err := b.profileArgs(m)
		if err != nil {
			t.Fatal(err)
		}
		wantProfiles := []string{"-heapprofile", filepath.Join(dir, "heap", m.id()+".pprof"),
			"-ready-cpuprofile", filepath.Join(dir, "cpu", m.id()+"-ready-cpu.pprof"), "-churn-cpuprofile", filepath.Join(dir, "cpu", m.id()+"-churn-cpu.pprof")}
		if !slices.Equal(profiles, wantProfiles) {
			t.Errorf("%s: profile args %q, want %q", tc.modes, profiles, wantProfiles)
		}

		// The child reads back what the parent wrote.
		k, f, err := parseChildFlags(append(args[1:], profiles...))
		if err != nil {
			t.Fatal(err)
		}
		if k != m.kind || f.kubeconfig != "/kc" || f.natsURL != "nats://n" || f.stream != streamName(m) || f.budget != m.budget ||
			f.settle != b.settle || f.scrapeEvery != b.scrapeEvery || f.noGzip != m.noGzip || !f.wait || !f.named || f.namespaces != 3 ||
			f.shard != m.shard.String() || f.heapProfile != profiles[1] || f.readyCPUProfile != profiles[3] || f.churnCPUProfile != profiles[5] {
			t.Errorf("%s: the child read %s %+v from %q", tc.modes, k.name, f, args)
		}
	}
}

// Without a churn the child does not wait for one, nor profile it.
func TestChildArgsWithoutChurn(t *testing.T) {
	b := &bench{kubeconfig: "/kc", layout: layout{namespaces: 1}, cpuProfiles: t.TempDir()}
	ms, err := selectModes("typed")
	if err != nil {
		t.Fatal(err)
	}
	args := b.childArgs(ms[0], "nats://n")
	if slices.Contains(args, "-wait") || slices.Contains(args, "-named-namespaces") || slices.Contains(args, "-budget") {
		t.Errorf("args %q", args)
	}
	profiles, err := b.profileArgs(ms[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(profiles) != 2 || profiles[0] != "-ready-cpuprofile" {
		t.Errorf("profile args %q", profiles)
	}
	if _, _, err := parseChildFlags([]string{"nosuch"}); err == nil || err.Error() != `unknown mode "nosuch"` {
		t.Errorf("child of an unknown mode: %v", err)
	}
}
