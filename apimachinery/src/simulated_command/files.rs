//! Files and users as a simulated command sees them, and Go's `os.FileMode` text, which agnhost
//! prints (`-rw-r--r--`, `dtrwxrwxrwx`).

/// A file or directory in a container's sandbox.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct File {
    /// The file's bytes as text; `None` for a directory.
    pub content: Option<String>,
    /// The permission bits with setuid (0o4000), setgid (0o2000) and sticky (0o1000).
    pub mode: u32,
    /// `statfs`'s filesystem type of the volume holding it (tmpfs is 0x01021994).
    pub fs_type: i64,
    pub uid: u64,
    pub gid: u64,
}

/// The filesystem magic of tmpfs, which holds ConfigMap, Secret, projected and downward-API
/// volumes and `medium: Memory` emptyDirs.
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
/// The filesystem magic of ext4, the node's disk in k1s's simulation.
pub const EXT4_MAGIC: i64 = 0xEF53;

/// Who a container's process runs as and what it may do.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Process {
    pub uid: u64,
    pub gid: u64,
    /// Supplemental groups, beyond the primary one.
    pub supplemental: Vec<u64>,
    pub privileged: bool,
    /// `allowPrivilegeEscalation: false`: a setuid program keeps the caller's uid.
    pub no_new_privs: bool,
}

impl Process {
    /// `id -G`: the primary group, then the supplemental ones (each once).
    pub fn groups(&self) -> Vec<u64> {
        let mut groups = vec![self.gid];
        for g in &self.supplemental {
            if !groups.contains(g) {
                groups.push(*g);
            }
        }
        groups
    }
}

/// Go's `os.FileMode.String()` of a file (`-rw-r--r--`) or directory (`drwxrwxrwx`, with `u`,
/// `g`, `t` after the `d` for setuid, setgid and sticky, as Go writes them).
pub fn go_file_mode(mode: u32, dir: bool) -> String {
    let mut out = String::new();
    if dir {
        out.push('d');
    }
    for (bit, letter) in [(0o4000, 'u'), (0o2000, 'g'), (0o1000, 't')] {
        if mode & bit != 0 {
            out.push(letter);
        }
    }
    if out.is_empty() {
        out.push('-');
    }
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    out
}

/// A path without `.`, empty elements and trailing slashes: `/etc//a/./b/` → `/etc/a/b`.
pub fn clean(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}
