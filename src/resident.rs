//! Gives back the code and read-only data pages that start-up touched and an idle server no
//! longer runs, so the resident set is what the running server uses.
//!
//! The kernel keeps every page of a file mapping that a process has touched mapped until memory
//! runs short: the serde code of each informer's first list, TLS and PKI set-up, the bootstrap
//! of a fresh data dir stay resident for the life of the process, though they run once. A few
//! seconds after start (and now and then after that) the server drops the mappings of its clean,
//! read-only file pages (`madvise(MADV_DONTNEED)`). The bytes stay in the page cache and come
//! back on the next access; the functions an idle server runs sit together at the front of the
//! code (`build/hot-symbols.txt`), so what comes back is little.

#![allow(unsafe_code)]

use std::time::Duration;

/// When to trim, from the command's start: after start-up, after the first periodic passes, then
/// every minute, so code that periodic tasks ran once (and an idle server no longer runs) does
/// not pile up; a trim costs a read of smaps and one syscall per mapping, and what the idle
/// server runs comes back in a few dense runs.
const SCHEDULE: [u64; 2] = [3, 30];
const PERIOD: Duration = Duration::from_secs(60);

/// Starts the background thread that trims (Linux only; elsewhere nothing happens).
pub fn spawn_trimmer() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("k1s-trim".into())
        .stack_size(64 * 1024)
        .spawn(|| {
            let waits = SCHEDULE
                .iter()
                .map(|s| Duration::from_secs(*s))
                .chain(std::iter::repeat(PERIOD));
            for wait in waits {
                std::thread::sleep(wait);
                let dropped = trim();
                tracing::debug!(kib = dropped / 1024, "gave back read-only file pages");
            }
        });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "no trimming thread");
    }
}

/// One mapping of `/proc/self/smaps` that can be dropped safely.
#[derive(Debug, PartialEq)]
struct Clean {
    start: usize,
    len: usize,
    rss_kib: usize,
}

/// Drops the clean read-only file mappings' pages; returns the bytes that were resident.
fn trim() -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut dropped = 0;
    for m in clean_mappings(&smaps) {
        // SAFETY: `m` is a private mapping of a file that this process cannot write (no `w`
        // permission) and that holds no anonymous (copied-on-write) page, so every page of it
        // equals the file's bytes. MADV_DONTNEED only removes the page-table entries; the next
        // access faults the same bytes in from the file. No Rust reference is invalidated.
        let advised = unsafe {
            rustix::mm::madvise(
                m.start as *mut std::ffi::c_void,
                m.len,
                rustix::mm::Advice::LinuxDontNeed,
            )
        };
        if advised.is_ok() {
            dropped += m.rss_kib * 1024;
        }
    }
    dropped
}

/// The mappings of `smaps` that are file-backed, not writable, and hold resident pages but no
/// anonymous ones (relocated RELRO data is read-only but anonymous: it must stay).
fn clean_mappings(smaps: &str) -> Vec<Clean> {
    let mut out = Vec::new();
    let mut current: Option<(usize, usize, bool)> = None;
    let (mut rss, mut anonymous) = (0usize, 0usize);
    let mut finish = |current: Option<(usize, usize, bool)>, rss: usize, anonymous: usize| {
        if let Some((start, end, eligible)) = current
            && eligible
            && rss > 0
            && anonymous == 0
        {
            out.push(Clean {
                start,
                len: end - start,
                rss_kib: rss,
            });
        }
    };
    for line in smaps.lines() {
        if let Some(header) = mapping_header(line) {
            finish(current.take(), rss, anonymous);
            current = Some(header);
            (rss, anonymous) = (0, 0);
        } else if let Some(kib) = field_kib(line, "Rss:") {
            rss = kib;
        } else if let Some(kib) = field_kib(line, "Anonymous:") {
            anonymous = kib;
        }
    }
    finish(current, rss, anonymous);
    out
}

/// `start-end perms offset dev inode path`: the range, and whether the mapping is a candidate
/// (private, not writable, backed by a file with an inode).
fn mapping_header(line: &str) -> Option<(usize, usize, bool)> {
    let mut fields = line.split_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    let perms = fields.next()?;
    if perms.len() != 4 || !perms.starts_with('r') {
        return (perms.len() == 4).then_some((start, end, false));
    }
    let (_offset, _dev, inode) = (fields.next()?, fields.next()?, fields.next()?);
    let path = fields.next().unwrap_or("");
    let eligible = perms.as_bytes()[1] == b'-'
        && perms.as_bytes()[3] == b'p'
        && inode != "0"
        && path.starts_with('/');
    Some((start, end, eligible))
}

fn field_kib(line: &str, name: &str) -> Option<usize> {
    line.strip_prefix(name)?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55bbecc15000-55bbed3a3000 r--p 00000000 fe:00 10642244                   /usr/bin/k1s
Size:               7736 kB
Rss:                3648 kB
Anonymous:             0 kB
VmFlags: rd mr mw me dw sd
55bbed3a3000-55bbef412000 r-xp 0078d000 fe:00 10642244                   /usr/bin/k1s
Size:              33212 kB
Rss:               12436 kB
Anonymous:             0 kB
55bbef412000-55bbef4ca000 r--p 027fb000 fe:00 10642244                   /usr/bin/k1s
Rss:                 736 kB
Anonymous:           736 kB
55bbef4ca000-55bbef4d3000 rw-p 028b2000 fe:00 10642244                   /usr/bin/k1s
Rss:                  36 kB
Anonymous:            20 kB
7f50e9000000-7f50e9400000 rw-p 00000000 00:00 0
Rss:                2048 kB
Anonymous:          2048 kB
7f50e9df7000-7f50e9f4d000 r-xp 00028000 fe:00 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 996 kB
Anonymous:             0 kB
7f50ea000000-7f50ea001000 r--p 00000000 fe:00 99                         /usr/lib/locale/empty
Rss:                   0 kB
Anonymous:             0 kB
7ffd1d5f2000-7ffd1d5f4000 r-xp 00000000 00:00 0                          [vdso]
Rss:                   8 kB
Anonymous:             0 kB
";

    #[test]
    fn only_clean_read_only_file_pages_are_dropped() {
        let found = clean_mappings(SMAPS);
        assert_eq!(
            found,
            vec![
                Clean {
                    start: 0x55bbecc15000,
                    len: 0x55bbed3a3000 - 0x55bbecc15000,
                    rss_kib: 3648,
                },
                Clean {
                    start: 0x55bbed3a3000,
                    len: 0x55bbef412000 - 0x55bbed3a3000,
                    rss_kib: 12436,
                },
                Clean {
                    start: 0x7f50e9df7000,
                    len: 0x7f50e9f4d000 - 0x7f50e9df7000,
                    rss_kib: 996,
                },
            ]
        );
    }

    #[test]
    fn trimming_gives_pages_back_and_the_process_runs_on() {
        let resident = || -> usize {
            let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
            clean_mappings(&smaps).iter().map(|m| m.rss_kib).sum()
        };
        let before = resident();
        let dropped = trim();
        // What this thread runs again comes back; far from all of it.
        let after = resident();
        assert!(dropped > 0, "a running test has resident code");
        assert!(
            after < before,
            "{after} KiB resident after, {before} KiB before"
        );
        // The code given back runs again (parsing, formatting, allocation).
        assert_eq!(field_kib("Rss:   12 kB", "Rss:"), Some(12));
    }
}
