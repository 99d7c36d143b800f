package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// copyWorkers is how many files a sandbox copies at once. Creating a file
// is kernel time (about 0.8 ms a file on the 2-core machine of the
// project's CI, for `cp -a` too), which several workers spread over the
// cores; more than a few only queue on the directory locks.
const copyWorkers = 4

// copier copies files into a sandbox and records them in its snapshot on
// copyWorkers goroutines. add and wait are called from one goroutine.
type copier struct {
	s    *Sandbox
	ctx  context.Context
	jobs chan copyJob
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

// copyJob is one path to copy: src (a regular file or a link, as fi
// says) to dst, recorded in the snapshot as rel unless skip.
type copyJob struct {
	src, dst, rel string
	fi            fs.FileInfo
	skip          bool
}

func (s *Sandbox) newCopier(ctx context.Context) *copier {
	c := &copier{s: s, ctx: ctx, jobs: make(chan copyJob, 64)}
	for range copyWorkers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for j := range c.jobs {
				if c.failed() == nil {
					c.fail(c.copy(j))
				}
			}
		}()
	}
	return c
}

func (c *copier) copy(j copyJob) error {
	if j.fi.Mode().Type() == fs.ModeSymlink {
		target, err := os.Readlink(j.src)
		if err != nil {
			return fmt.Errorf("sandbox: copying %s: %w", j.src, err)
		}
		if err := os.Symlink(target, j.dst); err != nil {
			return fmt.Errorf("sandbox: copying %s: %w", j.src, err)
		}
	} else if err := copyFile(j.src, j.dst, j.fi); err != nil {
		return fmt.Errorf("sandbox: copying %s: %w", j.src, err)
	}
	if j.skip {
		return nil
	}
	return c.s.record(c.ctx, j.rel)
}

func (c *copier) fail(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
}

func (c *copier) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// add queues j; it returns the first error of a copy so far, when there
// is one, so the caller stops.
func (c *copier) add(j copyJob) error {
	if err := c.failed(); err != nil {
		return err
	}
	c.jobs <- j
	return nil
}

// wait waits for every queued copy and returns the first error.
func (c *copier) wait() error {
	close(c.jobs)
	c.wg.Wait()
	return c.err
}
