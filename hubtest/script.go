package hubtest

import (
	"os"
	"syscall"
)

// WriteScript writes data to path as an executable file (mode 0755): a fake
// agent, a wrapper, a version script that the test then runs.
//
// It holds syscall.ForkLock for reading while the file is open for writing.
// Without that, a process that another goroutine of the test binary forks
// meanwhile (a parallel test starting its agent) inherits the write
// descriptor and holds it until it calls exec; running the script in that
// window fails with ETXTBSY, "text file busy" (https://go.dev/issue/22315),
// and the window widens with the machine's load. os/exec forks only while
// holding ForkLock for writing, so no fork happens while the file is open.
//
// WriteScript is safe for concurrent use. It blocks forks of this process
// for the time of one small write. A test that writes a file it then runs
// any other way (os.WriteFile and os.Chmod) has the same race.
func WriteScript(path string, data []byte) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, data, 0o755)
}
