//! How bad a finding is.

use std::fmt;
use std::str::FromStr;

/// A finding's severity, ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// From least to most severe.
    pub const ALL: [Severity; 4] = [Severity::Low, Severity::Medium, Severity::High, Severity::Critical];

    /// Their names, in the same order.
    pub const NAMES: [&'static str; 4] = ["low", "medium", "high", "critical"];

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("severity `{0}` is not one of low, medium, high, critical")]
pub struct UnknownSeverity(pub String);

impl FromStr for Severity {
    type Err = UnknownSeverity;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Severity::ALL.into_iter().find(|v| v.as_str() == s).ok_or_else(|| UnknownSeverity(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::Severity;

    #[test]
    fn severities_order_and_read_back() {
        assert!(Severity::Low < Severity::Medium && Severity::High < Severity::Critical);
        for s in Severity::ALL {
            assert_eq!(s.as_str().parse::<Severity>(), Ok(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert!("urgent".parse::<Severity>().unwrap_err().to_string().contains("low, medium, high, critical"));
        assert_eq!(format!("[{:<8}]", Severity::High), "[high    ]");
    }
}
