// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// A Go program: its runtime allocates its heap without malloc.  Prints
// "pid N ready", waits for SIGUSR1, allocates 64 MiB in 4 KiB slices through
// the Go runtime, prints "done" and sleeps until killed.  Built static
// (CGO_ENABLED=0: no C library at all) as go_alloc_static, and with cgo
// (go_cgo.go: dynamic, libc's malloc mapped but not what Go allocates with)
// as go_alloc_cgo (tests/Makefile.inc).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

var sink [][]byte

//go:noinline
func allocate() {
	for i := 0; i < 16384; i++ {
		sink = append(sink, make([]byte, 4096))
		if len(sink) >= 1024 {
			sink = sink[:0]
		}
	}
}

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	fmt.Printf("pid %d ready\n", os.Getpid())
	<-c
	allocate()
	fmt.Println("done")
	for {
		time.Sleep(time.Hour)
	}
}
