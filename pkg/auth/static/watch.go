package static

import (
	"os"
	"time"
)

// fileStamp identifies one version of the token file for change detection:
// its modification time and size, or the fact that it could not be stat'ed.
type fileStamp struct {
	ok      bool
	modTime time.Time
	size    int64
}

func statFile(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{ok: true, modTime: fi.ModTime(), size: fi.Size()}
}

func (a fileStamp) equal(b fileStamp) bool {
	return a.ok == b.ok && a.size == b.size && a.modTime.Equal(b.modTime)
}

// watch polls the file every s.poll and reloads it once its stamp differs
// from the one last read and has stayed the same for one poll, so a file
// caught in the middle of being written is not reported as broken (D-1). A
// file that disappears is reloaded once, which logs the read failure; it is
// reloaded again when it reappears.
func (s *Static) watch() {
	defer close(s.done)
	t := time.NewTicker(s.poll)
	defer t.Stop()
	var seen fileStamp // the stamp at the previous tick
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			now := statFile(s.path)
			settled := now.equal(seen)
			seen = now
			s.reloadMu.Lock()
			changed := !now.equal(s.stamp)
			s.reloadMu.Unlock()
			if changed && settled {
				_ = s.ReloadFor("file_changed") // logs and counts failures itself
			}
		}
	}
}
