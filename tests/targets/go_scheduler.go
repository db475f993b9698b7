// Go goroutines handing work over a channel and sleeping between items: their threads park in
// the scheduler (runtime.mcall -> park_m -> schedule) on the scheduler stack again and again.
// Usage: go_scheduler [SECONDS] (default 1). Prints "ok".
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	ch := make(chan int)
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for v := range ch {
				_ = work(v)
				time.Sleep(time.Millisecond)
			}
			done <- true
		}()
	}
	seconds := 1.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for time.Now().Before(end) {
		ch <- 200000
	}
	close(ch)
	for g := 0; g < 4; g++ {
		<-done
	}
	fmt.Println("ok")
}
