package procinfo

// StartTicks reads only a process's start time, field 22 of /proc/PID/stat in clock
// ticks after boot: what the push server records when a connection first speaks for a
// PID, so that a later reuse of the PID by another process is told apart. It returns
// an error wrapping ErrNotFound when the process is gone.
func (r *Reader) StartTicks(pid uint32) (uint64, error) {
	p, err := r.fs.Proc(int(pid))
	if err != nil {
		return 0, r.readErr(pid, "directory", err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, r.readErr(pid, "stat", err)
	}
	return st.Starttime, nil
}
