//! Crash-safe file writes shared by the PKI and kubeconfig code.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode for private keys and credential-bearing files.
pub(crate) const SECRET_MODE: u32 = 0o600;
/// Mode for certificates and public keys, which anyone may read.
pub(crate) const PUBLIC_MODE: u32 = 0o644;

/// Replaces `path` with `contents` so that a crash leaves either the old file or the new one,
/// never a partial one: write a temp file in the same directory, fsync it, rename it over the
/// target, then fsync the directory so the rename itself is durable.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path has no file name",
        ));
    };
    let tmp = dir.join(format!(
        ".{}.tmp.{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    // A leftover from a crashed run with the same pid; create_new below refuses to follow or
    // reuse anything already there.
    match fs::remove_file(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        // The open mode is filtered by the umask; set it outright so keys are 0600 regardless.
        f.set_permissions(Permissions::from_mode(mode))?;
        f.write_all(contents)?;
        f.sync_all()
    })();
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    File::open(dir)?.sync_all()
}

/// Creates `dir` (and parents) with mode 0700 if it does not exist; an existing directory's
/// mode is left as the operator set it.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    fs::set_permissions(dir, Permissions::from_mode(0o700))
}

/// Reads a file, mapping "does not exist" to `None` so callers can tell absent from broken.
pub(crate) fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
