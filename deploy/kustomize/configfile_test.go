package kustomize_test

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubebridge/kubebridge/internal/config"
	"github.com/kubebridge/kubebridge/internal/natsconf"
)

// configFileGenerator is the name of the base's configMapGenerator of the
// configuration file.
const configFileGenerator = "kubebridge-config-file"

// mountedFiles reads files as the bridge's container sees them: the keys
// of the ConfigMaps the build mounts into it, at their mount paths. What
// is not in a mounted ConfigMap does not exist.
func mountedFiles(b *build, bc bridgeContainer) func(string) ([]byte, error) {
	files := map[string]string{}
	for _, m := range bc.container.VolumeMounts {
		for _, v := range bc.pod.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			for _, cm := range ofType[*corev1.ConfigMap](b) {
				if cm.Namespace == bc.namespace && cm.Name == v.ConfigMap.Name {
					for k, data := range cm.Data {
						files[path.Join(m.MountPath, k)] = data
					}
				}
			}
		}
	}
	return func(name string) ([]byte, error) {
		data, ok := files[path.Clean(name)]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return []byte(data), nil
	}
}

// loadBridgeConfig is config.Load of env with the build's mounted files:
// the ConfigMaps', and the TLS files of hack/nats-certs.sh for the Secrets
// it writes (natsconf.LocalizeEnv).
func loadBridgeConfig(t testing.TB, b *build, bc bridgeContainer, env map[string]string) (*config.Config, error) {
	t.Helper()
	return config.Load(context.Background(), envconfig.MapLookuper(natsconf.LocalizeEnv(t, &bc.pod.Spec, bc.container, natsCerts(t), env)), config.WithReadFile(mountedFiles(b, bc)))
}

// TestConfigFileMounted: the bridge reads its configuration file from the
// generated ConfigMap, whose name carries the hash of its content, so that
// a change of the file rolls the pods.
func TestConfigFileMounted(t *testing.T) {
	for _, b := range okBuilds(t) {
		t.Run(b.name, func(t *testing.T) {
			bc := bridgeOf(t, b)
			cfg, _ := bridgeConfig(t, b, bc)
			if cfg.ConfigFile == "" {
				t.Fatal("BRIDGE_CONFIG is not set")
			}
			var mount *corev1.VolumeMount
			for i, m := range bc.container.VolumeMounts {
				if strings.HasPrefix(cfg.ConfigFile, strings.TrimSuffix(m.MountPath, "/")+"/") {
					mount = &bc.container.VolumeMounts[i]
				}
			}
			if mount == nil {
				t.Fatalf("BRIDGE_CONFIG=%s is in no volume mount", cfg.ConfigFile)
			}
			if !mount.ReadOnly {
				t.Errorf("volume mount %s is not read-only", mount.MountPath)
			}
			var cmName string
			for _, v := range bc.pod.Spec.Volumes {
				if v.Name == mount.Name && v.ConfigMap != nil {
					cmName = v.ConfigMap.Name
				}
			}
			prefix := configFileGenerator + "-"
			if !strings.HasPrefix(cmName, prefix) || len(cmName) != len(prefix)+10 {
				t.Errorf("BRIDGE_CONFIG's volume is ConfigMap %q, want %s-<hash> (configMapGenerator, with its name's hash)", cmName, configFileGenerator)
			}
		})
	}
}

// An overlay that lists the types in the file, with rules, as config.yaml
// says to: its ConfigMap's name changes, and the bridge loads the rules.
func TestConfigFileOverlay(t *testing.T) {
	overlay := t.TempDir()
	base, err := filepath.Abs("base")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - ` + filepath.ToSlash(rel) + `
configMapGenerator:
  - name: kubebridge-config
    behavior: merge
    literals:
      - BRIDGE_RESOURCES=
  - name: ` + configFileGenerator + `
    behavior: merge
    files:
      - config.yaml
`
	file := `apiVersion: kubebridge.io/v1alpha1
kind: BridgeConfiguration
resources:
- resource: configmaps
- resource: services
  ignoreFields:
  - [status]
- resource: deployments.apps
  ignoreFields:
  - [status]
  - [metadata, annotations, deployment.kubernetes.io/revision]
  when: "object.spec != oldObject.spec || object.metadata.labels != oldObject.metadata.labels"
  patch: true
  oldObject: false
`
	for name, data := range map[string]string{"kustomization.yaml": kustomization, "config.yaml": file} {
		if err := os.WriteFile(filepath.Join(overlay, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := render(overlay)
	if b.err != nil {
		t.Fatal(b.err)
	}
	bc := bridgeOf(t, b)
	cfg, env := bridgeConfig(t, b, bc)
	if env["BRIDGE_RESOURCES"] != "" {
		t.Errorf("BRIDGE_RESOURCES=%q, want it empty", env["BRIDGE_RESOURCES"])
	}
	var names []string
	for _, r := range cfg.Resources {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "configmaps,services,deployments.apps" {
		t.Errorf("resources %q, want the file's", names)
	}
	if len(cfg.Resources) == 3 && (cfg.Resources[0].Compiled != nil || cfg.Resources[2].Compiled == nil || !cfg.Resources[2].Rules.Patch) {
		t.Errorf("the rules are not the file's: %+v", cfg.Resources)
	}

	// The file's ConfigMap is not the base's.
	name := func(b *build) string {
		for _, v := range bridgeOf(t, b).pod.Spec.Volumes {
			if v.ConfigMap != nil && strings.HasPrefix(v.ConfigMap.Name, configFileGenerator) {
				return v.ConfigMap.Name
			}
		}
		return ""
	}
	var baseBuild *build
	for _, bb := range okBuilds(t) {
		if bb.name == "base" {
			baseBuild = bb
		}
	}
	if baseBuild == nil {
		t.Fatal("no build of base")
	}
	if n, bn := name(b), name(baseBuild); n == "" || n == bn {
		t.Errorf("the overlay mounts ConfigMap %q, the base %q: a changed file must change the name", n, bn)
	}
}
