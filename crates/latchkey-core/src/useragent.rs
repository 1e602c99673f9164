//! Embedded user agents that the authorization endpoint refuses (`disallowed_useragent`).
//!
//! An embedded web view lets the hosting app read what the user types, which defeats the point of the system
//! browser. Android's WebView marks itself with `; wv)`; iOS web views lack the `Safari/` token every iOS browser
//! sends; the in-app browsers of large social apps name themselves.

/// Whether the `User-Agent` header names an embedded web view.
pub fn is_embedded(user_agent: &str) -> bool {
    const IN_APP: [&str; 6] = ["FBAN/", "FBAV/", "Instagram", "Line/", "MicroMessenger/", "; wv)"];
    if IN_APP.iter().any(|m| user_agent.contains(m)) {
        return true;
    }
    let ios = user_agent.contains("iPhone") || user_agent.contains("iPad") || user_agent.contains("iPod");
    ios && user_agent.contains("AppleWebKit") && !user_agent.contains("Safari/")
}

#[cfg(test)]
mod tests {
    use super::is_embedded;

    #[test]
    fn android_webview_and_ios_webview_are_embedded() {
        assert!(is_embedded("Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/UQ1A; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0 Mobile Safari/537.36"));
        assert!(is_embedded("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"));
        assert!(is_embedded("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 [FBAN/FBIOS;FBAV/440.0]"));
    }

    #[test]
    fn system_browsers_are_not() {
        assert!(!is_embedded("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36"));
        assert!(!is_embedded("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"));
        assert!(!is_embedded("python-requests/2.31"));
        assert!(!is_embedded(""));
    }
}
