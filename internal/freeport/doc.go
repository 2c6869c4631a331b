// Package freeport picks local TCP ports for the servers tests start as
// children or in process. It picks them below the kernel's ephemeral
// range, so that a server killed and started again on its old port does
// not find it taken by some outgoing connection's local end, which the
// kernel hands out from that range (a port from 127.0.0.1:0 is one of
// those).
//
// Tests only. It imports nothing of this module.
package freeport
