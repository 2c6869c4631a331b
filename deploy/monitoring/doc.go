// Package monitoring tests what deploy/kustomize/components/monitoring
// ships (the ServiceMonitor, the PrometheusRule and the Grafana
// dashboard) against the bridge's real /metrics: every series the rules
// and the dashboard query exists, with the labels they use; the rules
// parse as Prometheus rules; and the alerts evaluate, with Prometheus's
// own rule and PromQL engines, true in the scenarios that should fire them
// and false in a healthy run. It is a module of its own so that
// Prometheus's packages stay out of the bridge's.
package monitoring
