package main

import (
	"fmt"
	"net"
)

// runFreePort prints N ports of 127.0.0.1 that were free a moment ago: the
// kernel's choice for port 0, so two benches side by side do not pick the
// same ones. The webhook configurations need the ports before the servers
// start, so the servers cannot bind port 0 themselves.
func runFreePort(args []string) error {
	n := 1
	if len(args) == 1 {
		if _, err := fmt.Sscan(args[0], &n); err != nil || n < 1 || n > 16 {
			return fmt.Errorf("usage: loadgen freeport [N<=16]")
		}
	}
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ls = append(ls, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
	return nil
}
