//! The registered claims (RFC 7519 §4.1) the way every signed token and introspection answer (RFC 7662 §2.2)
//! carries them: `aud` as one string or an array, times as NumericDates.

use serde_json::Value;

/// A NumericDate (RFC 7519 §2): whole seconds, or a finite fractional number of seconds, truncated.
pub(crate) fn numeric_date(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    value.as_i64().or_else(|| value.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
}

/// An `aud` (RFC 7519 §4.1.3): one string or an array of them (members that are not strings are skipped);
/// `None` when it is neither.
pub(crate) fn audiences(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::String(aud) => Some(vec![aud.clone()]),
        Value::Array(auds) => Some(auds.iter().filter_map(|a| a.as_str().map(str::to_owned)).collect()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numeric_dates_are_whole_or_fractional_seconds() {
        assert_eq!(numeric_date(Some(&json!(1_700_000_000))), Some(1_700_000_000));
        assert_eq!(numeric_date(Some(&json!(1_700_000_000.9))), Some(1_700_000_000));
        assert_eq!(numeric_date(Some(&json!("1700000000"))), None);
        assert_eq!(numeric_date(None), None);
    }

    #[test]
    fn an_audience_is_a_string_or_an_array() {
        assert_eq!(audiences(Some(&json!("https://api.example"))), Some(vec!["https://api.example".to_owned()]));
        assert_eq!(audiences(Some(&json!(["a", 1, "b"]))), Some(vec!["a".to_owned(), "b".to_owned()]));
        assert_eq!(audiences(Some(&json!({"a": 1}))), None);
        assert_eq!(audiences(None), None);
    }
}
