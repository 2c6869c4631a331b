package manifests

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var componentRE = regexp.MustCompile(`(?m)^kind:\s*Component\s*$`)

// Find lists, sorted, every directory under root that holds a
// kustomization. Components are left out: they only build as part of one.
func Find(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		switch d.Name() {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !componentRE.Match(data) {
				dirs = append(dirs, filepath.Dir(path))
			}
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// Built is the output of one kustomization.
type Built struct {
	// Objects holds each object's JSON, in kustomize's order.
	Objects [][]byte
	// YAML is the whole output as `kustomize build` prints it.
	YAML []byte
}

// Build runs kustomize on dir with the default options.
func Build(dir string) (*Built, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	b := &Built{}
	if b.YAML, err = resMap.AsYaml(); err != nil {
		return nil, err
	}
	for _, res := range resMap.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %s: %w", dir, res.CurId(), err)
		}
		b.Objects = append(b.Objects, data)
	}
	return b, nil
}
