//! The dashboard's files, embedded at compile time (no build step besides `cargo build`), and
//! the response that serves one of them under `/ui/`.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

/// One embedded file.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

/// Every file, by its path under `/ui/` (`""` is the index page).
pub const ASSETS: &[Asset] = &[
    Asset {
        path: "",
        content_type: "text/html; charset=utf-8",
        body: include_bytes!("../assets/index.html"),
    },
    Asset {
        path: "app.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../assets/app.js"),
    },
    Asset {
        path: "app.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../assets/app.css"),
    },
    Asset {
        path: "favicon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("../assets/favicon.svg"),
    },
];

/// Whether `path` is under the dashboard's prefix (`/ui`, `/ui/...`).
pub fn is_ui_path(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// The embedded file at `path` (`/ui/app.js`), if any.
pub fn find(path: &str) -> Option<&'static Asset> {
    let rel = path.strip_prefix("/ui/")?;
    ASSETS.iter().find(|a| a.path == rel)
}

/// The response for a GET of a `/ui` path: the file, a redirect from `/ui` to `/ui/`, or a 404.
/// The files are small and local: `no-cache` keeps an upgraded binary's page current, the
/// headers keep the page from being framed or sniffed and its scripts to its own origin.
pub fn response(path: &str) -> Response {
    if path == "/ui" {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
        resp.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/ui/"));
        return resp;
    }
    let Some(asset) = find(path) else {
        let mut resp = Response::new(Body::from("404 page not found\n"));
        *resp.status_mut() = StatusCode::NOT_FOUND;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return resp;
    };
    let mut resp = Response::new(Body::from(asset.body));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_files_under_ui() {
        for (path, found) in [
            ("/ui/", true),
            ("/ui/app.js", true),
            ("/ui/app.css", true),
            ("/ui/nope.js", false),
            ("/app.js", false),
            ("/ui", false),
        ] {
            assert_eq!(find(path).is_some(), found, "{path}");
        }
    }

    #[test]
    fn responses() {
        assert_eq!(response("/ui").status(), StatusCode::MOVED_PERMANENTLY);
        assert_eq!(response("/ui/").status(), StatusCode::OK);
        assert_eq!(response("/ui/x").status(), StatusCode::NOT_FOUND);
        assert!(is_ui_path("/ui/app.js") && is_ui_path("/ui") && !is_ui_path("/uix"));
    }
}
