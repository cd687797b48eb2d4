//! agnhost's subcommands that upstream's e2e pods run for their output: `mounttest` (a volume's
//! files, modes, owners and filesystem), `entrypoint-tester` (its argv) and `pause`. Formats are
//! agnhost's (`test/images/agnhost`); other subcommands (servers) run until stopped.

use super::State;
use super::files::{File, TMPFS_MAGIC, go_file_mode};

/// The most lines a simulated run is followed for: a longer one (a client's `--retry_time` of a
/// year) is beyond this module, so it runs until stopped.
const MAX_LINES: i64 = 100_000;

/// What mounttest writes into a file it creates.
const NEW_FILE_CONTENT: &str = "mount-tester new file\n";

/// Runs `agnhost SUBCOMMAND ARGS...` (`program` is argv[0], which entrypoint-tester prints).
pub(super) fn run(state: &mut State, program: &str, args: &[&str]) -> Option<()> {
    let (sub, rest) = args.split_first()?;
    match *sub {
        "pause" => {
            state.print("Paused\n");
            state.run_forever();
        }
        "entrypoint-tester" => {
            // Go's `fmt.Printf("%v\n", os.Args)`.
            let all: Vec<&str> = std::iter::once(program)
                .chain(args.iter().copied())
                .collect();
            state.print(&format!("[{}]\n", all.join(" ")));
            state.status = 0;
        }
        "mounttest" => mounttest(state, &flags(rest)?)?,
        "logs-generator" => logs_generator(state, &flags(rest)?)?,
        "etc-hosts" if rest.is_empty() => {
            // `fmt.Println` of the file.
            let hosts = state.file("/etc/hosts").and_then(|f| f.content);
            match hosts {
                Some(h) => {
                    state.print(&format!("{h}\n"));
                    state.status = 0;
                }
                None => state.status = 1,
            }
        }
        _ => return None,
    }
    Some(())
}

/// logs-generator: `--log-lines-total` (`-t`) apiserver-like klog lines spread evenly over
/// `--run-duration` (`-d`). Its random picks are drawn from the line number, so a log read twice
/// reads the same.
fn logs_generator(state: &mut State, flags: &[(&str, &str)]) -> Option<()> {
    let flag = |long: &str, short: &str| {
        flags
            .iter()
            .rev()
            .find(|(k, _)| *k == long || *k == short)
            .map(|(_, v)| *v)
    };
    if flags
        .iter()
        .any(|(k, _)| !matches!(*k, "log-lines-total" | "t" | "run-duration" | "d"))
    {
        return None;
    }
    let total: i64 = flag("log-lines-total", "t").unwrap_or("0").parse().ok()?;
    let duration = go_duration(flag("run-duration", "d").unwrap_or("0"))?;
    if total > MAX_LINES {
        return None;
    }
    if total <= 0 || duration <= 0.0 {
        // klog.Fatalf: exit 255.
        state.status = 255;
        return Some(());
    }
    let delay = duration / total as f64;
    let start = state.seconds;
    for id in 0..total {
        state.seconds = start + delay * id as f64;
        let mut pick = Picks((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let method = ["GET", "POST", "PUT"][pick.below(3)];
        let namespace = ["kube-system", "default", "ns"][pick.below(3)];
        let name: String = (0..3 + pick.below(2))
            .map(|_| b"bcdfghjklmnpqrstvwxz2456789"[pick.below(27)] as char)
            .collect();
        let status = 200 + pick.below(400);
        state.flush();
        state.output.push(super::Output {
            after_seconds: state.seconds,
            line: super::Line::Klog(format!(
                "{id} {method} /api/v1/namespaces/{namespace}/pods/{name} {status}"
            )),
        });
    }
    state.seconds = start + duration;
    state.status = 0;
    Some(())
}

/// A small deterministic generator (splitmix64) for logs-generator's picks.
struct Picks(u64);

impl Picks {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// Go's `time.ParseDuration` for the units a test writes (`20s`, `1m30s`, `500ms`).
fn go_duration(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = text;
    if rest == "0" {
        return Some(0.0);
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|at| *at > 0)?;
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "ms", "s", "m", "h"]
            .into_iter()
            .find(|u| rest.starts_with(u))?;
        total += n * match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            _ => 3600.0,
        };
        rest = &rest[unit.len()..];
    }
    Some(total)
}

/// pflag's `--name=value` and `--name value` (single dash too); `None` for a bare argument.
fn flags<'a>(args: &[&'a str]) -> Option<Vec<(&'a str, &'a str)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].trim_start_matches('-');
        if arg.len() == args[i].len() {
            return None;
        }
        match arg.split_once('=') {
            Some((k, v)) => out.push((k, v)),
            None => {
                i += 1;
                out.push((arg, *args.get(i)?));
            }
        }
        i += 1;
    }
    Some(out)
}

/// mounttest: checks in agnhost's fixed order (fs type, new files, mode, perms, owner, content,
/// content in a loop); exits 1 when any failed.
fn mounttest(state: &mut State, flags: &[(&str, &str)]) -> Option<()> {
    let flag = |name: &str| {
        flags
            .iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    };
    let known = [
        "fs_type",
        "new_file_0644",
        "new_file_0666",
        "new_file_0660",
        "new_file_0777",
        "file_mode",
        "file_perm",
        "file_owner",
        "file_content",
        "file_content_in_loop",
        "retry_time",
        "break_on_expected_content",
    ];
    if flags.iter().any(|(k, _)| !known.contains(k)) {
        return None;
    }
    let mut failed = false;
    if let Some(path) = flag("fs_type") {
        match state.file(path) {
            Some(f) if f.fs_type == TMPFS_MAGIC => {
                state.print(&format!("mount type of {path:?}: tmpfs\n"));
            }
            Some(f) => state.print(&format!("mount type of {path:?}: {}\n", f.fs_type)),
            None => {
                state.print(&format!(
                    "error from statfs({path:?}): no such file or directory\n"
                ));
                failed = true;
            }
        }
    }
    for (name, perm) in [
        ("new_file_0644", 0o644),
        ("new_file_0666", 0o666),
        ("new_file_0660", 0o660),
        ("new_file_0777", 0o777),
    ] {
        let Some(path) = flag(name) else { continue };
        let dir = path.rsplit_once('/').map_or("/", |(d, _)| d);
        let parent = state.file(if dir.is_empty() { "/" } else { dir });
        match parent {
            Some(parent) if parent.content.is_none() => {
                // A new file takes the process's uid and, in a setgid directory, its group.
                let user = state.sandbox.process();
                let gid = if parent.mode & 0o2000 != 0 {
                    parent.gid
                } else {
                    user.gid
                };
                state.write_file(
                    path,
                    File {
                        content: Some(NEW_FILE_CONTENT.into()),
                        mode: perm,
                        fs_type: parent.fs_type,
                        uid: user.uid,
                        gid,
                    },
                );
                state.print(&format!("content of file {path:?}: {NEW_FILE_CONTENT}\n"));
            }
            _ => {
                state.print(&format!(
                    "error writing new file {path:?}: open {path}: no such file or directory\n"
                ));
                failed = true;
            }
        }
    }
    let stat_error =
        |path: &str| format!("error from Stat({path:?}): stat {path}: no such file or directory\n");
    if let Some(path) = flag("file_mode") {
        match state.file(path) {
            Some(f) => {
                let mode = go_file_mode(f.mode, f.content.is_none());
                state.print(&format!("mode of file {path:?}: {mode}\n"));
            }
            None => {
                state.print(&stat_error(path));
                failed = true;
            }
        }
    }
    if let Some(path) = flag("file_perm") {
        match state.file(path) {
            Some(f) => {
                let perm = go_file_mode(f.mode & 0o777, false);
                state.print(&format!("perms of file {path:?}: {perm}\n"));
            }
            None => {
                state.print(&stat_error(path));
                failed = true;
            }
        }
    }
    if let Some(path) = flag("file_owner") {
        match state.file(path) {
            Some(f) => state.print(&format!(
                "owner UID of {path:?}: {}\nowner GID of {path:?}: {}\n",
                f.uid, f.gid
            )),
            None => {
                state.print(&format!(
                    "error from stat({path:?}): no such file or directory\n"
                ));
                failed = true;
            }
        }
    }
    if let Some(path) = flag("file_content") {
        match state.file(path).and_then(|f| f.content) {
            Some(c) => state.print(&format!("content of file {path:?}: {c}\n")),
            None => {
                state.print(&format!(
                    "error reading file content for {path:?}: open {path}: no such file or directory\n"
                ));
                failed = true;
            }
        }
    }
    if let Some(path) = flag("file_content_in_loop") {
        let retry: f64 = flag("retry_time").map_or(Some(180.0), |v| v.parse().ok())?;
        if retry.is_nan() || retry / 2.0 > MAX_LINES as f64 {
            return None;
        }
        let break_on_expected = flag("break_on_expected_content").is_none_or(|v| v != "false");
        // Read every 2 s until the retry time is up; the content is what the volume holds now.
        let content = state.file(path).and_then(|f| f.content);
        let started = state.seconds;
        loop {
            match &content {
                Some(c) => {
                    state.print(&format!("content of file {path:?}: {c}\n"));
                    if break_on_expected {
                        if c == NEW_FILE_CONTENT {
                            break;
                        }
                        state.print(&format!(
                            "Unexpected content. Expected: {NEW_FILE_CONTENT}. Retrying"
                        ));
                    }
                }
                None => state.print(&format!(
                    "Error reading file {path}: open {path}: no such file or directory, retrying\n"
                )),
            }
            state.seconds += 2.0;
            if state.seconds - started >= retry {
                break;
            }
        }
        failed |= content.is_none();
    }
    state.status = i32::from(failed);
    Some(())
}
