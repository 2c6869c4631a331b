package informers

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// compactListWatch lists and watches res in namespace ns (all when empty)
// as the dynamic client does, in JSON, but decodes the objects straight
// into Compact (compactDecoder), trimmed as trims says and packed by the
// packer it returns, whose informer is to set its packing once built.
func compactListWatch(cfg *rest.Config, res *Resource, ns string, tweak func(*metav1.ListOptions), trims TransformOptions) (*cache.ListWatch, *packer, error) {
	p := &packer{}
	gv := res.GVR.GroupVersion()
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.ContentType, c.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	// The meta types (watch events, Status, list options) in version v1,
	// as the dynamic client has them.
	v1 := schema.GroupVersion{Version: "v1"}
	meta := runtime.NewScheme()
	metav1.AddToGroupVersion(meta, v1)
	c.NegotiatedSerializer = compactNegotiator{info: []runtime.SerializerInfo{{
		MediaType: runtime.ContentTypeJSON, MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
		Serializer: newCompactDecoder(trims, res, p),
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true,
			Serializer:    newWatchEventDecoder(json.NewSerializerWithOptions(json.DefaultMetaFactory, meta, meta, json.SerializerOptions{})),
			Framer:        jsonFramer{},
		},
	}}}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: REST client: %w", res, err)
	}
	params := runtime.NewParameterCodec(meta)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return rc.Get().Namespace(ns).Resource(res.GVR.Resource).SpecificallyVersionedParams(&opts, params, v1).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			opts.Watch = true
			return rc.Get().Namespace(ns).Resource(res.GVR.Resource).SpecificallyVersionedParams(&opts, params, v1).Watch(ctx)
		},
	}, p, nil
}

// compactNegotiator offers the REST client JSON only, decoded by a
// compactDecoder, as the dynamic client offers it decoded into
// Unstructured.
type compactNegotiator struct{ info []runtime.SerializerInfo }

func (n compactNegotiator) SupportedMediaTypes() []runtime.SerializerInfo { return n.info }

func (n compactNegotiator) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (n compactNegotiator) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}
