package agent

import (
	"bufio"
	"errors"
	"io"
)

// lineBuf is what a connection keeps between lines: a line longer than
// it is read into memory of its own, which goes once the line is decoded.
// A bufio.Scanner grows its buffer to the longest line it has seen and
// keeps it, so every session that once answered megabytes of figures
// would hold megabytes for its life. 8 KB holds most answers whole;
// 64 KB was 42 MB of the daemon's heap over a thousand idle sessions.
const lineBuf = 8 << 10

// errLineTooLong is a line from the agent over MaxLine.
var errLineTooLong = errors.New("agent sent a line over the limit")

// lineReader reads the agent's newline-ended lines. After an error it
// answers that error forever: a line cut short leaves the stream out of
// step.
type lineReader struct {
	r   *bufio.Reader
	max int
	err error
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, lineBuf), max: max}
}

// next returns the next line without its newline; it is valid until the
// next call.
func (l *lineReader) next() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	var long []byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		switch {
		case err == nil && long == nil:
			return chunk[:len(chunk)-1], nil
		case err == nil:
			return append(long, chunk[:len(chunk)-1]...), nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(long)+len(chunk) > l.max {
				l.err = errLineTooLong
				return nil, l.err
			}
			long = append(long, chunk...)
		default:
			if err == io.EOF && len(long)+len(chunk) > 0 {
				err = io.ErrUnexpectedEOF
			}
			l.err = err
			return nil, err
		}
	}
}
