//! What a simulated container's command would do, when it is simple enough to know without
//! running it: `exit N`, `sleep N`, `true`, `false`, `echo`, `date`, `env`, `cat`, `test`,
//! `id -u`, directly or in an `sh -c` script of such commands joined by `;`, `&&`, `||` or new
//! lines, with `$VAR` references; and agnhost's test subcommands (`mounttest`,
//! `entrypoint-tester`, `pause`). So `kubectl create job hello --image=busybox -- echo hi`
//! completes and logs `hi`, `sh -c "exit 1"` fails and upstream's e2e pods that print their
//! environment or their volumes' files print what a node would. What the command sees (its
//! environment, files, user) comes from a [`Sandbox`]. Anything else (an image's own entrypoint,
//! a loop, a pipe, a program) runs until it is stopped; the simulated node's
//! `sim.k1s.io/run-seconds` and `exit-code` annotations override both. The simulated node and
//! the log endpoint share it.

mod agnhost;
mod files;
pub mod pod;
mod shell;
#[cfg(test)]
mod tests;

pub use files::{EXT4_MAGIC, File, Process, TMPFS_MAGIC, clean as clean_path, go_file_mode};

/// How a known command ends, and what it writes on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Seconds until it exits; `None` when it runs until stopped (`sleep infinity`, `pause`).
    pub ends_after: Option<f64>,
    pub code: i32,
    pub output: Vec<Output>,
    /// Whether the last line of output ended without a new line (`echo -n DONE`).
    pub open_last_line: bool,
    /// The files it wrote (absolute paths) with their final content: the kubelet reads the
    /// termination message from one.
    pub written: Vec<(String, String)>,
}

/// One line the command writes, `after_seconds` into its run.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub after_seconds: f64,
    pub line: Line,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Text(String),
    /// `date`: the time it ran, in busybox's format.
    Date,
    /// A klog `Info` line of agnhost's logs-generator: its header holds the time it ran.
    Klog(String),
}

/// A log line's text; `date` lines show when they ran, `after_seconds` into a run started at
/// `started`, in busybox's format.
pub fn line_text(line: &Line, started: jiff::Timestamp, after_seconds: f64) -> String {
    let at = || {
        started
            .checked_add(jiff::SignedDuration::from_secs_f64(after_seconds))
            .unwrap_or(started)
    };
    match line {
        Line::Text(t) => t.clone(),
        Line::Date => at().strftime("%a %b %e %H:%M:%S UTC %Y").to_string(),
        // klog's header: severity, date, time with microseconds, thread id (`%7d`), source.
        Line::Klog(msg) => format!(
            "I{}       1 logs_generator.go:76] {msg}",
            at().strftime("%m%d %H:%M:%S%.6f")
        ),
    }
}

/// What a command can see of its container. The log endpoint knows what the API holds (the
/// ConfigMaps and Secrets of volumes and env); the simulated node only the pod.
pub trait Sandbox {
    /// The process's environment, in the order the runtime sets it.
    fn env(&self) -> Vec<(String, String)>;
    /// The file or directory at an absolute path, `None` when there is none.
    fn file(&self, path: &str) -> Option<File>;
    /// Who the process runs as.
    fn process(&self) -> Process;
    /// Whether a file may be created at a path; else the error's text (`Read-only file
    /// system`, `nonexistent directory`).
    fn writable(&self, path: &str) -> Result<(), &'static str>;
}

/// A container that sees nothing: no environment, no files, root.
pub struct EmptySandbox;

impl Sandbox for EmptySandbox {
    fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    fn file(&self, _: &str) -> Option<File> {
        None
    }
    fn process(&self) -> Process {
        Process::default()
    }
    fn writable(&self, _: &str) -> Result<(), &'static str> {
        Ok(())
    }
}

/// The argv a container runs: its `command` then `args`, the image's `ENTRYPOINT` when it has
/// no command (agnhost's `/agnhost`), its `CMD` when it has neither (agnhost's `pause`,
/// busybox's `sh`). Images k1s does not know are taken to have no entrypoint.
pub fn container_argv(image: &str, command: &[String], args: &[String]) -> Vec<String> {
    if !command.is_empty() {
        return command.iter().chain(args).cloned().collect();
    }
    let (entrypoint, cmd): (&[&str], &[&str]) = match image_name(image) {
        "agnhost" => (&["/agnhost"], &["pause"]),
        "busybox" => (&[], &["sh"]),
        // e2e's nonewprivs image runs a setuid-root program that prints its effective uid.
        "nonewprivs" => (&["/usr/local/bin/nnp"], &[]),
        _ => (&[], &[]),
    };
    let tail: Vec<String> = if args.is_empty() {
        cmd.iter().map(|s| s.to_string()).collect()
    } else {
        args.to_vec()
    };
    entrypoint
        .iter()
        .map(|s| s.to_string())
        .chain(tail)
        .collect()
}

/// An image reference's last path element without tag or digest: `registry.k8s.io/e2e-test-images/agnhost:2.53` → `agnhost`.
fn image_name(image: &str) -> &str {
    let path = image.split('@').next().unwrap_or(image);
    let last = path.rsplit('/').next().unwrap_or(path);
    last.split(':').next().unwrap_or(last)
}

/// The outcome of a container's argv (see [`container_argv`]), `None` when it cannot be told.
pub fn outcome<'a>(
    argv: impl IntoIterator<Item = &'a str>,
    sandbox: &dyn Sandbox,
) -> Option<Outcome> {
    let argv: Vec<&str> = argv.into_iter().collect();
    let (program, rest) = argv.split_first()?;
    let mut state = State::new(sandbox);
    if is_shell(program) {
        // `sh -c SCRIPT [NAME ARGS...]`: only the script matters here.
        let at = rest.iter().position(|a| *a == "-c")?;
        shell::run_script(&mut state, rest.get(at + 1)?)?;
    } else {
        state.run(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
    }
    Some(state.finish())
}

fn base(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_shell(program: &str) -> bool {
    matches!(base(program), "sh" | "bash" | "ash" | "dash")
}

/// A run in progress: its clock, status, output and the files it wrote.
struct State<'a> {
    sandbox: &'a dyn Sandbox,
    seconds: f64,
    status: i32,
    /// `exit` ran, or a command that never returns: nothing after it runs.
    exited: bool,
    forever: bool,
    output: Vec<Output>,
    /// Text written since the last new line.
    partial: String,
    written: Vec<(String, File)>,
    /// Shell variables set by the script.
    vars: Vec<(String, String)>,
    /// How deep in `$(...)` substitutions the run is.
    depth: usize,
}

/// The deepest `$(...)` nesting followed (a client's script must not exhaust the stack).
const MAX_SUBSTITUTION_DEPTH: usize = 8;

impl<'a> State<'a> {
    fn new(sandbox: &'a dyn Sandbox) -> Self {
        State {
            sandbox,
            seconds: 0.0,
            status: 0,
            exited: false,
            forever: false,
            output: Vec::new(),
            partial: String::new(),
            written: Vec::new(),
            vars: Vec::new(),
            depth: 0,
        }
    }

    /// A shell variable, else an environment variable.
    fn var(&self, name: &str) -> Option<String> {
        let set = self.vars.iter().rev().find(|(k, _)| k == name);
        match set {
            Some((_, v)) => Some(v.clone()),
            None => self
                .sandbox
                .env()
                .into_iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v),
        }
    }

    fn set_var(&mut self, name: &str, value: &str) {
        self.vars.push((name.to_string(), value.to_string()));
    }

    /// `$(SCRIPT)`: what the script writes, without its final new lines; its time passes.
    fn substitute(&mut self, script: &str) -> Option<String> {
        if self.depth >= MAX_SUBSTITUTION_DEPTH {
            return None;
        }
        self.depth += 1;
        let ran = self.captured(|s| shell::run_script(s, script));
        self.depth -= 1;
        let (text, _) = ran?;
        Some(text.trim_end_matches('\n').to_string())
    }

    /// Runs `f` with its output captured instead of logged: the text, with `f`'s answer.
    fn captured<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<(String, T)> {
        let output = std::mem::take(&mut self.output);
        let partial = std::mem::take(&mut self.partial);
        let exited = std::mem::replace(&mut self.exited, false);
        let answer = f(self);
        let lines = std::mem::replace(&mut self.output, output);
        let rest = std::mem::replace(&mut self.partial, partial);
        self.exited = exited;
        let mut text = String::new();
        for l in lines {
            if let Line::Text(t) = l.line {
                text.push_str(&t);
                text.push('\n');
            }
        }
        text.push_str(&rest);
        Some((text, answer?))
    }

    /// `WORDS > PATH` (or `>>`): the file is created first, as the shell does; when it cannot
    /// be, the command does not run.
    fn run_redirected(&mut self, words: &[String], path: &str, append: bool) -> Option<()> {
        if path == "/dev/null" {
            self.captured(|s| s.run(words))?;
            return Some(());
        }
        if let Err(why) = self.sandbox.writable(&files::clean(path)) {
            self.print(&format!("/bin/sh: can't create {path}: {why}\n"));
            self.status = 1;
            return Some(());
        }
        let (text, ()) = self.captured(|s| s.run(words))?;
        let old = match self.file(path) {
            Some(File {
                content: Some(c), ..
            }) if append => c,
            _ => String::new(),
        };
        let process = self.sandbox.process();
        self.write_file(
            path,
            File {
                content: Some(old + &text),
                mode: 0o644,
                fs_type: files::EXT4_MAGIC,
                uid: process.uid,
                gid: process.gid,
            },
        );
        Some(())
    }

    /// Runs one simple command; `None` when it is not one this module knows.
    fn run(&mut self, words: &[String]) -> Option<()> {
        let (name, args) = words.split_first()?;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match base(name) {
            "exit" => {
                self.status = match args.first() {
                    Some(n) => n.parse().ok()?,
                    None => self.status,
                };
                self.exited = true;
            }
            "sleep" => {
                if args.first() == Some(&"infinity") {
                    self.run_forever();
                    return Some(());
                }
                let mut total = 0.0;
                for a in &args {
                    total += duration(a)?;
                }
                self.seconds += total;
                self.status = 0;
            }
            "echo" => {
                // busybox's echo: `-n` leaves out the new line, `-e` changes nothing here.
                let mut newline = true;
                let mut words = args.as_slice();
                while let Some((flag, rest)) = words.split_first() {
                    match *flag {
                        "-n" => newline = false,
                        "-e" | "-E" => {}
                        "-ne" | "-en" => newline = false,
                        _ => break,
                    }
                    words = rest;
                }
                let mut text = words.join(" ");
                if newline {
                    text.push('\n');
                }
                self.print(&text);
                self.status = 0;
            }
            "date" if args.is_empty() => {
                self.flush();
                self.output.push(Output {
                    after_seconds: self.seconds,
                    line: Line::Date,
                });
                self.status = 0;
            }
            "env" | "printenv" if args.is_empty() => {
                let text: String = self
                    .sandbox
                    .env()
                    .iter()
                    .map(|(k, v)| format!("{k}={v}\n"))
                    .collect();
                self.print(&text);
                self.status = 0;
            }
            "printenv" => {
                let env = self.sandbox.env();
                self.status = 0;
                for name in args {
                    match env.iter().find(|(k, _)| k == name) {
                        Some((_, v)) => self.print(&format!("{v}\n")),
                        None => self.status = 1,
                    }
                }
            }
            "hostname" => {
                let host = self.var("HOSTNAME")?;
                let name = match args.as_slice() {
                    [] => host,
                    // The canonical name /etc/hosts gives the host name.
                    ["-f"] => self.canonical_name(&host).unwrap_or(host),
                    _ => return None,
                };
                self.print(&format!("{name}\n"));
                self.status = 0;
            }
            "cat" => {
                self.status = 0;
                for path in args {
                    match self.file(path) {
                        Some(File {
                            content: Some(c), ..
                        }) => self.print(&c),
                        Some(_) => {
                            self.print("cat: read error: Is a directory\n");
                            self.status = 1;
                        }
                        None => {
                            self.print(&format!(
                                "cat: can't open '{path}': No such file or directory\n"
                            ));
                            self.status = 1;
                        }
                    }
                }
            }
            "test" => self.status = i32::from(!self.test(&args)?),
            "[" | "[[" => {
                let close = if base(name) == "[" { "]" } else { "]]" };
                let (last, expr) = args.split_last()?;
                if *last != close {
                    return None;
                }
                self.status = i32::from(!self.test(expr)?);
            }
            "id" => {
                let p = self.sandbox.process();
                // busybox names the ids its image's /etc/passwd and /etc/group know: root.
                let named = |id: u64| match id {
                    0 => "0(root)".to_string(),
                    n => n.to_string(),
                };
                let text = match args.as_slice() {
                    [] => {
                        let groups: Vec<String> = p.groups().into_iter().map(named).collect();
                        format!(
                            "uid={} gid={} groups={}",
                            named(p.uid),
                            named(p.gid),
                            groups.join(",")
                        )
                    }
                    ["-u"] => p.uid.to_string(),
                    ["-g"] => p.gid.to_string(),
                    ["-G"] => p
                        .groups()
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(" "),
                    _ => return None,
                };
                self.print(&format!("{text}\n"));
                self.status = 0;
            }
            "touch" | "mkdir" => {
                let dirs = base(name) == "mkdir";
                let paths: Vec<&str> = args
                    .iter()
                    .copied()
                    .filter(|a| !a.starts_with('-'))
                    .collect();
                self.status = 0;
                for path in paths {
                    if self.file(path).is_some() {
                        continue;
                    }
                    if let Err(why) = self.sandbox.writable(&files::clean(path)) {
                        self.print(&format!("{}: {path}: {why}\n", base(name)));
                        self.status = 1;
                        continue;
                    }
                    let p = self.sandbox.process();
                    let (content, mode) = if dirs {
                        (None, 0o755)
                    } else {
                        (Some(String::new()), 0o644)
                    };
                    self.write_file(
                        path,
                        File {
                            content,
                            mode,
                            fs_type: files::EXT4_MAGIC,
                            uid: p.uid,
                            gid: p.gid,
                        },
                    );
                }
            }
            "sysctl" => {
                let names: Vec<&str> = args.iter().copied().filter(|a| *a != "-n").collect();
                let value_only = args.contains(&"-n");
                self.status = 0;
                for n in names {
                    let dotted = n.replace('/', ".");
                    let path = format!("/proc/sys/{}", dotted.replace('.', "/"));
                    match self.file(&path).and_then(|f| f.content) {
                        Some(v) if value_only => self.print(&format!("{}\n", v.trim_end())),
                        Some(v) => self.print(&format!("{dotted} = {}\n", v.trim_end())),
                        None => {
                            self.print(&format!("sysctl: error: '{dotted}' is an unknown key\n"));
                            self.status = 1;
                        }
                    }
                }
            }
            "grep" => {
                // Fixed patterns only: `grep Seccomp: /proc/self/status`.
                let (pattern, paths) = args.split_first()?;
                if pattern.starts_with('-') || pattern.contains(['.', '*', '[', '^', '$', '\\']) {
                    return None;
                }
                let mut found = false;
                for path in paths {
                    let content = self.file(path).and_then(|f| f.content).unwrap_or_default();
                    for line in content.lines().filter(|l| l.contains(pattern)) {
                        found = true;
                        let line = if paths.len() > 1 {
                            format!("{path}:{line}\n")
                        } else {
                            format!("{line}\n")
                        };
                        self.print(&line);
                    }
                }
                self.status = i32::from(!found);
            }
            "ip" => {
                // Changing links needs CAP_NET_ADMIN: only privileged containers have it.
                if !matches!(args.first(), Some(&"link") | Some(&"addr") | Some(&"route"))
                    || args.len() < 2
                    || args[1] == "show"
                {
                    return None;
                }
                if self.sandbox.process().privileged {
                    self.status = 0;
                } else {
                    self.print("ip: RTNETLINK answers: Operation not permitted\n");
                    self.status = 2;
                }
            }
            "nnp" if args.is_empty() => {
                let p = self.sandbox.process();
                let euid = if p.no_new_privs { p.uid } else { 0 };
                self.print(&format!("Effective uid: {euid}\n"));
                self.status = 0;
            }
            "printf" => {
                let (format, values) = args.split_first()?;
                let text = printf(format, values)?;
                self.print(&text);
                self.status = 0;
            }
            "exec" => {
                // The shell becomes the command: nothing after it runs.
                self.run(&words[1..])?;
                self.exited = true;
            }
            "true" | ":" => self.status = 0,
            "false" => self.status = 1,
            "agnhost" | "agnhost-2" => agnhost::run(self, name, &args)?,
            _ => return None,
        }
        Some(())
    }

    /// `test EXPR` for the file tests and string comparisons busybox knows; `None` otherwise.
    fn test(&self, args: &[&str]) -> Option<bool> {
        match args {
            ["!", rest @ ..] => self.test(rest).map(|b| !b),
            [op, path] if op.len() == 2 && op.starts_with('-') => {
                let file = self.file(path);
                Some(match *op {
                    "-e" | "-r" => file.is_some(),
                    "-d" => file.is_some_and(|f| f.content.is_none()),
                    "-f" => file.is_some_and(|f| f.content.is_some()),
                    "-s" => file.is_some_and(|f| f.content.is_some_and(|c| !c.is_empty())),
                    "-n" => !path.is_empty(),
                    "-z" => path.is_empty(),
                    _ => return None,
                })
            }
            [a, "=", b] | [a, "==", b] => Some(a == b),
            [a, "!=", b] => Some(a != b),
            [a, op, b] if op.starts_with('-') => {
                let (a, b): (i64, i64) = (a.parse().ok()?, b.parse().ok()?);
                Some(match *op {
                    "-eq" => a == b,
                    "-ne" => a != b,
                    "-lt" => a < b,
                    "-le" => a <= b,
                    "-gt" => a > b,
                    "-ge" => a >= b,
                    _ => return None,
                })
            }
            [a, "-a", b] => Some(self.test(&[a])? && self.test(&[b])?),
            [s] => Some(!s.is_empty()),
            _ => None,
        }
    }

    /// The first name of the /etc/hosts line that names `host`.
    fn canonical_name(&self, host: &str) -> Option<String> {
        let hosts = self.file("/etc/hosts")?.content?;
        hosts
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>())
            .find(|names| names.contains(&host))
            .and_then(|names| names.first().map(|n| n.to_string()))
    }

    /// A file as the command sees it: one it wrote, else the sandbox's.
    fn file(&self, path: &str) -> Option<File> {
        let path = files::clean(path);
        match self.written.iter().rev().find(|(p, _)| *p == path) {
            Some((_, f)) => Some(f.clone()),
            None => self.sandbox.file(&path),
        }
    }

    fn write_file(&mut self, path: &str, file: File) {
        self.written.push((files::clean(path), file));
    }

    fn run_forever(&mut self) {
        self.forever = true;
        self.exited = true;
    }

    /// Writes text to the log: whole lines become log lines, the rest waits for its new line.
    fn print(&mut self, text: &str) {
        self.partial.push_str(text);
        while let Some(at) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=at).collect();
            self.output.push(Output {
                after_seconds: self.seconds,
                line: Line::Text(line[..line.len() - 1].to_string()),
            });
        }
    }

    fn flush(&mut self) {
        if !self.partial.is_empty() {
            self.print("\n");
        }
    }

    fn finish(mut self) -> Outcome {
        let open_last_line = !self.partial.is_empty();
        self.flush();
        let mut written: Vec<(String, String)> = Vec::new();
        for (path, file) in self.written {
            written.retain(|(p, _)| *p != path);
            if let Some(content) = file.content {
                written.push((path, content));
            }
        }
        Outcome {
            ends_after: (!self.forever).then_some(self.seconds),
            code: self.status.rem_euclid(256),
            output: self.output,
            open_last_line,
            written,
        }
    }
}

/// `printf FORMAT ARGS...` for `%s`, `%d`, `%%` and the `\n`, `\t`, `\\` escapes; `None` for
/// anything else.
fn printf(format: &str, values: &[&str]) -> Option<String> {
    let mut out = String::new();
    let mut values = values.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(match chars.next()? {
                'n' => '\n',
                't' => '\t',
                '\\' => '\\',
                _ => return None,
            }),
            '%' => match chars.next()? {
                '%' => out.push('%'),
                's' => out.push_str(values.next().copied().unwrap_or("")),
                'd' => out.push_str(
                    &values
                        .next()
                        .map_or(Some(0), |v| v.parse::<i64>().ok())?
                        .to_string(),
                ),
                _ => return None,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// `sleep`'s operand: seconds, or with an `s`, `m`, `h` or `d` suffix.
fn duration(arg: &str) -> Option<f64> {
    let (number, unit) = match arg.char_indices().last()? {
        (i, 's') => (&arg[..i], 1.0),
        (i, 'm') => (&arg[..i], 60.0),
        (i, 'h') => (&arg[..i], 3600.0),
        (i, 'd') => (&arg[..i], 86400.0),
        _ => (arg, 1.0),
    };
    let n: f64 = number.parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some(n * unit)
}
