package main

import (
	"bytes"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// keyboard is hub chat's terminal on stdin, in a mode of its own while the
// conversation lasts: keys come one by one, unechoed, and Ctrl-C is a key
// (0x03) rather than SIGINT, so that it can interrupt a turn instead of
// ending hub; output processing is left on, so that the answer's "\n"
// still starts a line at its first column. The terminal's own line editing
// is golang.org/x/term's Terminal (editor), reading through the keyboard.
//
// One goroutine reads the terminal and hands each read over on chunks; it
// is left blocked in its read when the conversation ends (a read of a
// terminal cannot be cut short) and goes with hub's exit. The rest is used
// from hub chat's goroutine only.
type keyboard struct {
	f       *os.File
	old     *unix.Termios
	chunks  chan []byte // closed at the end of the terminal's input (a hangup)
	pending []byte      // read, not yet given to the editor: typed ahead during a turn
}

// keyCtrlC and keyCtrlD are the keys of Ctrl-C and Ctrl-D in the mode.
const (
	keyCtrlC = 0x03
	keyCtrlD = 0x04
)

// openKeyboard puts the terminal f in the keyboard's mode and starts
// reading it; restore puts the mode back.
func openKeyboard(f *os.File) (*keyboard, error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	mode := *old
	// As term.MakeRaw (cfmakeraw), but for the output flags.
	mode.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	mode.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	mode.Cflag &^= unix.CSIZE | unix.PARENB
	mode.Cflag |= unix.CS8
	mode.Cc[unix.VMIN] = 1
	mode.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &mode); err != nil {
		return nil, err
	}
	k := &keyboard{f: f, old: old, chunks: make(chan []byte, 16)}
	go k.read()
	return k, nil
}

func (k *keyboard) read() {
	defer close(k.chunks)
	buf := make([]byte, 4096)
	for {
		n, err := k.f.Read(buf)
		if n > 0 {
			k.chunks <- bytes.Clone(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// restore puts the terminal back in the mode it had.
func (k *keyboard) restore() {
	_ = unix.IoctlSetTermios(int(k.f.Fd()), unix.TCSETS, k.old)
}

// size is the terminal's width and height, 0 when unknown.
func (k *keyboard) size() (int, int) {
	ws, err := unix.IoctlGetWinsize(int(k.f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

// typeAhead keeps b, keys read while a turn runs, for the next prompt;
// it reports whether b held a Ctrl-C, which is not kept.
func (k *keyboard) typeAhead(b []byte) (ctrlC bool) {
	ctrlC = bytes.IndexByte(b, keyCtrlC) >= 0
	k.pending = append(k.pending, bytes.ReplaceAll(b, []byte{keyCtrlC}, nil)...)
	return ctrlC
}

// Errors of editorIO's reads, which the editor's ReadLine returns.
var (
	errCtrlC       = errors.New("Ctrl-C")
	errSessionOver = errors.New("the session has ended")
)

// ctrlCMark is what editorIO gives the editor for a Ctrl-C: a character
// of the private use area, which the editor's AutoCompleteCallback
// (editorIO.complete) turns into an empty line. x/term's Terminal ends
// ReadLine with io.EOF for Ctrl-C as for Ctrl-D, and keeps the line: the
// mark lets hub chat tell them apart and clear the line.
const ctrlCMark = '\uE000'

// editorIO is the line editor's terminal: keys from the keyboard (typed
// ahead first), its drawing to out. A Ctrl-C is given as ctrlCMark, then
// the read after it fails with errCtrlC; once over is closed a read that
// waits fails with errSessionOver.
type editorIO struct {
	kb   *keyboard
	out  io.Writer
	over <-chan struct{}

	feed      []byte // the keys being given to the editor
	ctrlC     bool   // the mark was given: the next read fails with errCtrlC
	lineEmpty bool   // the line was empty at the last Ctrl-C
	// armed says a Ctrl-C (at an empty prompt, or one that interrupted
	// the turn) came last: another one at an empty prompt ends the
	// session. Any other key disarms it.
	armed bool
}

func (e *editorIO) Write(p []byte) (int, error) { return e.out.Write(p) }

func (e *editorIO) Read(p []byte) (int, error) {
	for len(e.feed) == 0 {
		if e.ctrlC {
			e.ctrlC = false
			return 0, errCtrlC
		}
		if len(e.kb.pending) == 0 {
			select {
			case b, ok := <-e.kb.chunks:
				if !ok {
					return 0, io.EOF
				}
				e.kb.pending = b
			case <-e.over:
				return 0, errSessionOver
			}
		}
		switch i := bytes.IndexByte(e.kb.pending, keyCtrlC); {
		case i < 0:
			e.feed, e.kb.pending = e.kb.pending, nil
		case i > 0:
			e.feed, e.kb.pending = e.kb.pending[:i], e.kb.pending[i:]
		default:
			e.feed, e.kb.pending, e.ctrlC = []byte(string(ctrlCMark)), e.kb.pending[1:], true
		}
		if !e.ctrlC {
			e.armed = false
		}
	}
	n := copy(p, e.feed)
	e.feed = e.feed[n:]
	return n, nil
}

// complete is the editor's AutoCompleteCallback: at ctrlCMark it empties
// the line, noting whether it was empty already.
func (e *editorIO) complete(line string, _ int, key rune) (string, int, bool) {
	if key != ctrlCMark {
		return "", 0, false
	}
	e.lineEmpty = line == ""
	return "", 0, true
}
