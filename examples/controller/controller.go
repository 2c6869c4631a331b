package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// appIndex indexes ConfigMaps by their app label.
const appIndex = "app"

// Controller reconciles ConfigMaps: for each one that changed it looks
// the ConfigMap up in the lister and its siblings (same app label) in the
// index, and says what it would do. It keeps the last resourceVersion it
// reconciled per ConfigMap ("" once it is gone), so that runs on both
// sources can be compared.
type Controller struct {
	informer cache.SharedIndexInformer
	lister   listersv1.ConfigMapLister
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]

	mu         sync.Mutex
	reconciled map[cache.ObjectName]string
}

// NewController sets a controller up on informer, which must hold
// *corev1.ConfigMaps and have the appIndex indexer.
func NewController(ctx context.Context, informer cache.SharedIndexInformer) (*Controller, error) {
	c := &Controller{
		informer: informer,
		lister:   listersv1.NewConfigMapLister(informer.GetIndexer()),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "configmaps"}),
		reconciled: map[cache.ObjectName]string{},
	}
	logger := klog.FromContext(ctx)
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(logger, obj) },
		UpdateFunc: func(_, obj any) { c.enqueue(logger, obj) },
		DeleteFunc: func(obj any) { c.enqueue(logger, obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("add event handler: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueue(logger klog.Logger, obj any) {
	name, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleErrorWithLogger(logger, err, "Cannot name the object", "object", obj)
		return
	}
	c.queue.Add(name)
}

// Run waits for the informer's cache, then runs workers until ctx ends.
// The informer must be running.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Waiting for the informer's cache")
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return fmt.Errorf("the informer's cache did not sync: %w", context.Cause(ctx))
	}
	logger.Info("Starting workers", "count", workers)
	for range workers {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
	logger.Info("Shutting down workers")
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextItem(ctx) {
	}
}

func (c *Controller) processNextItem(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed; retrying", "configmap", name)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync reconciles one ConfigMap with what the cache holds now.
func (c *Controller) sync(ctx context.Context, name cache.ObjectName) error {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "configmap", name)
	cm, err := c.lister.ConfigMaps(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		logger.Info("Gone; would clean up after it")
		c.record(name, "")
		return nil
	}
	if err != nil {
		return err
	}
	var siblings []any
	if app, ok := cm.Labels[appIndex]; ok {
		if siblings, err = c.informer.GetIndexer().ByIndex(appIndex, app); err != nil {
			return err
		}
	}
	logger.Info("Would reconcile", "resourceVersion", cm.ResourceVersion, "keys", len(cm.Data), "sameApp", len(siblings))
	c.record(name, cm.ResourceVersion)
	return nil
}

func (c *Controller) record(name cache.ObjectName, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reconciled[name] = rv
}

// Reconciled returns, per ConfigMap, the resourceVersion last reconciled
// ("" once it was found gone).
func (c *Controller) Reconciled() map[cache.ObjectName]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[cache.ObjectName]string, len(c.reconciled))
	for k, v := range c.reconciled {
		out[k] = v
	}
	return out
}
