//! The pages of 2-step verification: the second step of a sign-in, enrolment (the QR code and its confirming
//! code), and a new set of recovery codes, shown once.

use askama::Template;

/// The second step of a password sign-in.
#[derive(Template)]
#[template(path = "second_step.html")]
pub struct SecondStepPage<'a> {
    /// The sign-in form's CSRF token.
    pub csrf: &'a str,
    /// Where the sign-in goes on to.
    pub continue_to: &'a str,
    /// Whether the account has an authenticator app (the page takes a code).
    pub totp: bool,
    /// Whether passkeys are available on this server ("Use a passkey instead").
    pub passkeys: bool,
    /// Why the last code was refused.
    pub error: Option<&'a str>,
}

/// Turning on 2-step verification: from the account page, or during a sign-in that requires it.
#[derive(Template)]
#[template(path = "enrol.html")]
pub struct EnrolPage<'a> {
    /// Where the form goes (`/account/two-step` or `/signin/enrol`).
    pub action: &'a str,
    /// The form's CSRF token.
    pub csrf: &'a str,
    /// The account's id, on the account page's form.
    pub account: Option<&'a str>,
    /// Where a sign-in goes on to, during one.
    pub continue_to: &'a str,
    /// Whether the person's organisation requires it (a sign-in that cannot go on without it).
    pub required: bool,
    /// The QR code, an SVG element drawn by the server.
    pub qr_svg: &'a str,
    /// The secret as text (base32).
    pub secret_text: &'a str,
    /// The secret sealed for the form.
    pub enrolment: &'a str,
    /// Why the last code was refused.
    pub error: Option<&'a str>,
}

/// A new set of recovery codes, shown once.
#[derive(Template)]
#[template(path = "recovery_codes.html")]
pub struct RecoveryCodesPage<'a> {
    /// Why they are shown (2-step verification turned on, or a new set).
    pub heading: &'a str,
    /// The codes.
    pub codes: &'a [String],
    /// Where to go next.
    pub next: &'a str,
}
