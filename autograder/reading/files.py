"""Regular files only, never through a symbolic link, within size caps; anything else is NotRead, saying what it is.

A FIFO opened for reading blocks until a writer comes (it hung the grader); a device may never end; a link may point
out of the submission folder. So an entry is looked at with lstat, opened with O_NOFOLLOW | O_NONBLOCK, and read only
when it is the same regular file that lstat saw.
"""
import os
import stat

MAX_SOURCE_BYTES = 4 * 2**20       # a .py file: a kernel module is at most 1,000,000 characters (grammar.py)
MAX_NOTEBOOK_BYTES = 32 * 2**20    # a notebook, its outputs (plots) included
MAX_TIMESTAMP_BYTES = 4096         # nbgrader's timestamp.txt: one line
MAX_FILES = 100                    # .py and .ipynb files read of one submission folder (five stages, a few copies)


class NotRead(Exception):
    """A file of a submission that was not read: `why` says why, without the path."""

    def __init__(self, path, why):
        super().__init__(f"{path}: {why}")
        self.path, self.why = path, why


def cap_for(path):
    """The most bytes read of a submission's file (by its name)."""
    return MAX_NOTEBOOK_BYTES if path.endswith(".ipynb") else MAX_SOURCE_BYTES


def describe(st, path):
    """What a non-regular entry is, and that it was not read."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        target = target if len(target) <= 60 else target[:57] + "..."
        return (f"a symbolic link (to {target!r}), not a file: the grader never follows links; submit the file "
                "itself")
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode) else
            "not a regular file")
    return f"{kind}, not a file: the grader reads regular files only"


def too_big(size, cap):
    return (f"{size:,} bytes, more than the {cap:,} the grader reads of such a file (a notebook with large outputs: "
            "clear them, Edit > Clear Outputs of All Cells, and save)")


def read_bytes(path, cap=None, follow=False):
    """The bytes of the regular file `path` (at most `cap`, default cap_for(path)); NotRead for anything else: a
    link (unless `follow`: a file the user named on the command line), a folder, a FIFO, a device, a socket, a file
    larger than `cap` or one the grader may not open. Never blocks on a FIFO or a device."""
    cap = cap_for(path) if cap is None else cap
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        raise NotRead(path, f"cannot read it ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(st.st_mode):
        raise NotRead(path, describe(st, path))
    if st.st_size > cap:
        raise NotRead(path, too_big(st.st_size, cap))
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise NotRead(path, f"cannot read it ({exc.strerror or exc})") from exc
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise NotRead(path, "it was replaced while the grader read it: submit it again")
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise NotRead(path, f"cannot read it ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)
    if size > cap:
        raise NotRead(path, too_big(size, cap))
    return b"".join(chunks)


def read_text(path, cap=None, follow=False):
    """A submitted file's text: UTF-8, without the byte-order mark some editors write at its start (Notepad, some
    LMS downloads). NotRead, saying why, for what read_bytes refuses and for text that is not UTF-8."""
    data = read_bytes(path, cap, follow)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotRead(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from exc


def copy_regular(path, dest, cap=None):
    """Copy the regular file `path` to `dest` (its times kept), as read_bytes reads it; the reason it was not
    copied, or "" (formgrader's copy of a submission: a link's target or a FIFO is never copied)."""
    try:
        data = read_bytes(path, cap)
        st = os.lstat(path)
    except (NotRead, OSError) as exc:
        if os.path.lexists(dest) and not os.path.isdir(dest):
            os.remove(dest)  # an earlier submission's copy is not this one's
        return getattr(exc, "why", str(exc))
    with open(dest, "wb") as f:
        f.write(data)
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))
    return ""
