//! The sign-in and consent pages as a browser reads them: the first form's action and the page's inputs.

use scraper::{Html, Selector};

/// What a page's form holds, read by an HTML parser (references decoded) and kept as owned strings.
#[derive(Debug, PartialEq)]
pub struct Page {
    /// The `action` of the first form, if there is a form.
    pub action: Option<String>,
    /// Each named input: (type, name, value).
    inputs: Vec<(String, String, String)>,
}

impl Page {
    /// Reads a page.
    pub fn parse(body: &str) -> Self {
        let doc = Html::parse_document(body);
        // Constant selectors, which parse.
        let select = |s: &str| Selector::parse(s).expect("a valid selector");
        let action = doc.select(&select("form")).next().and_then(|f| f.attr("action")).map(str::to_owned);
        let attr = |e: &scraper::ElementRef, k| e.attr(k).unwrap_or_default().to_owned();
        let inputs = doc
            .select(&select("input[name]"))
            .map(|e| (attr(&e, "type"), attr(&e, "name"), attr(&e, "value")))
            .collect();
        Self { action, inputs }
    }

    /// The value of the first input named `name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.inputs.iter().find(|i| i.1 == name).map(|i| i.2.as_str())
    }

    /// Whether the page asks for a password (a sign-in page).
    pub fn asks_password(&self) -> bool {
        self.inputs.iter().any(|i| i.0 == "password")
    }

    /// The name and value of every hidden input.
    pub fn hidden(&self) -> Vec<(String, String)> {
        self.inputs.iter().filter(|i| i.0 == "hidden").map(|i| (i.1.clone(), i.2.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// node-oidc-provider's dev consent page, as it serves it (abridged).
    const CONSENT: &str = r#"<div class="container"><h1>Authorize</h1>
      <form autocomplete="off" action="/interaction/Ab-1_x/confirm?x=1&amp;y=2" method="post">
        <input type="hidden" name="prompt" value="consent"/>
        <input type="hidden" name="note" value="a &quot;b&quot;">
        <input required type="text" name="login" placeholder="Enter any login">
        <button autofocus type="submit" class="login login-submit">Continue</button>
      </form></div>"#;

    #[test]
    fn a_form_is_read_from_its_page() {
        let page = Page::parse(CONSENT);
        assert_eq!(page.action.as_deref(), Some("/interaction/Ab-1_x/confirm?x=1&y=2"));
        assert_eq!(page.hidden(), vec![("prompt".into(), "consent".into()), ("note".into(), "a \"b\"".into())]);
        assert_eq!(page.value("note"), Some("a \"b\""));
        assert!(!page.asks_password());
        assert_eq!(Page::parse("<p>no form</p>").action, None);
    }

    #[test]
    fn a_sign_in_page_is_told_by_its_password_input() {
        let page = Page::parse(r#"<form action="/signin"><input name="password" type="password"></form>"#);
        assert!(page.asks_password());
        assert_eq!(page.value("password"), Some(""));
        assert_eq!(page.value("csrf"), None);
    }
}
