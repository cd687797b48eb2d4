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

pub use files::{EXT4_MAGIC, File, TMPFS_MAGIC, User, clean as clean_path, go_file_mode};

/// How a known command ends, and what it writes on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Seconds until it exits; `None` when it runs until stopped (`sleep infinity`, `pause`).
    pub ends_after: Option<f64>,
    pub code: i32,
    pub output: Vec<Output>,
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
}

/// What a command can see of its container. The log endpoint knows what the API holds (the
/// ConfigMaps and Secrets of volumes and env); the simulated node only the pod.
pub trait Sandbox {
    /// The process's environment, in the order the runtime sets it.
    fn env(&self) -> Vec<(String, String)>;
    /// The file or directory at an absolute path, `None` when there is none.
    fn file(&self, path: &str) -> Option<File>;
    /// Who the process runs as.
    fn user(&self) -> User;
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
    fn user(&self) -> User {
        User::default()
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
}

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
        }
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
            "hostname" if args.is_empty() => {
                let env = self.sandbox.env();
                let host = env.iter().find(|(k, _)| k == "HOSTNAME")?;
                self.print(&format!("{}\n", host.1));
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
                            self.print(&format!("cat: read error: Is a directory\n"));
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
            "id" => {
                let user = self.sandbox.user();
                let text = match args.as_slice() {
                    ["-u"] => user.uid.to_string(),
                    ["-g"] => user.gid.to_string(),
                    ["-G"] => user
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
            [s] => Some(!s.is_empty()),
            _ => None,
        }
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
        self.flush();
        Outcome {
            ends_after: (!self.forever).then_some(self.seconds),
            code: self.status.rem_euclid(256),
            output: self.output,
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
