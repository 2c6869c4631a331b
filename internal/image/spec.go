package image

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// File is one file of the image: a binary taken from a platform's binary
// directory and put at Path.
type File struct {
	// Path is where the file is in the image, absolute ("/bridge").
	Path string
	// Binary is the file's name in the platform's binary directory, where
	// `make build` leaves it ("bridge").
	Binary string
}

// Spec is what the image declares. Kubebridge returns kubebridge's; the
// Dockerfile's final stage must declare the same.
type Spec struct {
	Files        []File
	User         string   // "uid:gid"
	Entrypoint   []string // no shell: the image has none
	ExposedPorts []string // "8080/tcp"
}

// Kubebridge is the spec of kubebridge's image: the bridge as entrypoint
// and the kubebridge CLI beside it, run as the distroless "nonroot" user
// 65532 that the Deployment's securityContext names too. The CA roots are
// compiled into both binaries (golang.org/x/crypto/x509roots/fallback), so
// the image holds nothing else.
func Kubebridge() Spec {
	return Spec{
		Files: []File{
			{Path: "/bridge", Binary: "bridge"},
			{Path: "/kubebridge", Binary: "kubebridge"},
		},
		User:         "65532:65532",
		Entrypoint:   []string{"/bridge"},
		ExposedPorts: []string{"8080/tcp"},
	}
}

// The OCI annotations the image, its manifests and its index carry (and
// its config, as labels, where docker inspect shows them).
const (
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationCreated  = "org.opencontainers.image.created"
	// AnnotationRefName names an image in an OCI layout's index.json.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// annotationContainerdName is the name containerd (and docker load
	// with the containerd store) gives an image loaded from a layout.
	annotationContainerdName = "io.containerd.image.name"
)

// SourceURL is where the image's source is: its
// org.opencontainers.image.source.
const SourceURL = "https://github.com/kubebridge/kubebridge"

// Metadata is what the annotations say. Created is the commit time, not
// the build time, so that two builds of one commit are identical.
type Metadata struct {
	Version  string
	Revision string
	Source   string
	Created  time.Time
}

// Annotations are the OCI annotations of m.
func (m Metadata) Annotations() map[string]string {
	return map[string]string{
		AnnotationVersion:  m.Version,
		AnnotationRevision: m.Revision,
		AnnotationSource:   m.Source,
		AnnotationCreated:  m.Created.UTC().Format(time.RFC3339),
	}
}

func (m Metadata) validate() error {
	var missing []string
	for k, v := range m.Annotations() {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if m.Created.IsZero() {
		missing = append(missing, "created time")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("image metadata: no %s", strings.Join(missing, ", "))
	}
	return nil
}
