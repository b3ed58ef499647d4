//! What happens in a generated session: the steps of a conversation, and which findings
//! they must produce.

use std::collections::VecDeque;

use rand::Rng;
use rand::seq::IndexedRandom;
use serde_json::{Value, json};

use super::Expected;

/// One thing that happens in a session, before it is rendered into events.
#[derive(Debug, Clone)]
pub enum Step {
    User(String),
    Agent(String),
    ToolOk {
        name: String,
        params: Value,
        result: Value,
    },
    ToolFail {
        name: String,
        params: Value,
        error: String,
    },
    /// run.start, llm.input, llm.output, run.end and friends: context the detectors ignore.
    Lifecycle(&'static str),
}

/// How a session is published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publish {
    A,
    /// Schema A with the v1 envelope.
    AEnvelope,
    B,
    /// Both schemas, as when two publishers overlap: every event twice.
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Clean,
    NearMiss,
    Correction,
    ToolFail,
    DoomLoop,
    Dissatisfied,
    RepeatFail,
    Hallucination,
    UnverifiedClaim,
    UnconfirmedAction,
    UnconfirmedAttempt,
    UngroundedValue,
    UnstatedAction,
    Unanswered,
    ErrorEnding,
    LeftUnfinished,
    TermsChanged,
    /// A plan talked over: a topic, a decision, a wait, sometimes a closure; no finding.
    Planning,
}

impl Scenario {
    pub const ALL: [Scenario; 18] = [
        Scenario::Clean,
        Scenario::NearMiss,
        Scenario::Correction,
        Scenario::ToolFail,
        Scenario::DoomLoop,
        Scenario::Dissatisfied,
        Scenario::RepeatFail,
        Scenario::Hallucination,
        Scenario::UnverifiedClaim,
        Scenario::UnconfirmedAction,
        Scenario::UnconfirmedAttempt,
        Scenario::UngroundedValue,
        Scenario::UnstatedAction,
        Scenario::Unanswered,
        Scenario::ErrorEnding,
        Scenario::LeftUnfinished,
        Scenario::TermsChanged,
        Scenario::Planning,
    ];
    /// Relative frequency in generated traffic.
    fn weight(self) -> u32 {
        match self {
            Scenario::Clean => 40,
            Scenario::NearMiss => 8,
            _ => 6,
        }
    }
}

/// A session to render.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    pub number: u64,
    pub agent: &'static str,
    pub start_ms: i64,
    pub publish: Publish,
    /// Whether session.start / session.end frame the session (schema A only).
    pub framed: bool,
    pub steps: Vec<Step>,
    pub findings: Vec<(&'static str, &'static str)>,
    /// Decisions the cortex patterns must find (each one worded once).
    pub decisions: u64,
}

impl SessionPlan {
    /// A plain exchange of exactly `events` events (in schema A, unframed).
    pub fn filler(rng: &mut impl Rng, number: u64, start_ms: i64, events: usize) -> Self {
        let steps = (0..events)
            .map(|i| if i % 2 == 0 { Step::User(pick(rng, FILLER_ASKS)) } else { Step::Agent(pick(rng, FILLER_ANSWERS)) })
            .collect();
        SessionPlan { number, agent: "main", start_ms, publish: Publish::A, framed: false, steps, findings: vec![], decisions: 0 }
    }

    pub fn count_findings(&self, expected: &mut Expected) {
        for (signal, severity) in &self.findings {
            *expected.findings.entry((*signal).to_owned()).or_default() += 1;
            *expected.severities.entry((*signal).to_owned()).or_default().entry((*severity).to_owned()).or_default() += 1;
        }
        expected.decisions += self.decisions;
    }
}

/// A failure shared by the sessions of a repeat-fail group.
#[derive(Debug, Clone)]
struct SharedFailure {
    name: String,
    params: Value,
    error: String,
    occurrence: u32,
}

/// Chooses the next session; keeps repeat-fail groups going across sessions.
#[derive(Debug, Default)]
pub struct Planner {
    repeats: VecDeque<SharedFailure>,
    groups: u64,
}

impl Planner {
    pub fn next(&mut self, rng: &mut impl Rng, number: u64, start_ms: i64, _remaining: u64) -> SessionPlan {
        let agent = *AGENTS.choose(rng).expect("agents");
        let publish = *[Publish::A, Publish::A, Publish::AEnvelope, Publish::B, Publish::Both].choose(rng).expect("modes");
        let framed = publish != Publish::B && rng.random_bool(0.8);
        let mut plan = SessionPlan { number, agent, start_ms, publish, framed, steps: vec![], findings: vec![], decisions: 0 };
        if let Some(shared) = self.repeats.pop_front() {
            self.repeat_session(rng, &mut plan, shared);
            return plan;
        }
        let total: u32 = Scenario::ALL.iter().map(|s| s.weight()).sum();
        let mut roll = rng.random_range(0..total);
        let scenario = *Scenario::ALL
            .iter()
            .find(|s| {
                if roll < s.weight() {
                    true
                } else {
                    roll -= s.weight();
                    false
                }
            })
            .expect("weights cover the roll");
        self.build(rng, &mut plan, scenario);
        plan
    }

    fn build(&mut self, rng: &mut impl Rng, plan: &mut SessionPlan, scenario: Scenario) {
        let n = plan.number;
        let s = &mut plan.steps;
        s.push(Step::Lifecycle("run.start"));
        match scenario {
            Scenario::Clean => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(Step::Lifecycle("llm.input"));
                s.push(Step::Lifecycle("llm.output"));
                s.push(ok_tool(rng, n));
                s.push(Step::Agent(pick(rng, ANSWERS)));
                s.push(Step::User(pick(rng, THANKS)));
                s.push(Step::Agent("You're welcome.".into()));
                if rng.random_bool(0.3) {
                    s.push(Step::Lifecycle("session.compaction_start"));
                    s.push(Step::Lifecycle("session.compaction_end"));
                }
            }
            Scenario::NearMiss => {
                s.push(Step::User("Can you restart the web service?".into()));
                s.push(Step::Agent("Soll ich den Dienst jetzt neu starten?".into()));
                s.push(Step::User("nein".into()));
                s.push(Step::Agent("Okay, I will leave it as it is and clear the cache instead.".into()));
                s.push(ok_tool(rng, n));
                s.push(Step::Agent("Done ✅ the cache was cleared.".into()));
                s.push(Step::User(pick(rng, THANKS)));
            }
            Scenario::Correction => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(ok_tool(rng, n));
                s.push(Step::Agent(pick(rng, ASSERTIONS)));
                s.push(Step::User(pick(rng, CORRECTIONS)));
                s.push(Step::Agent("Sorry, you are right; I will use the value you gave.".into()));
                plan.findings.push(("SIG-CORRECTION", "medium"));
            }
            Scenario::ToolFail => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(fail_tool(n, 0));
                s.push(Step::Agent("I could not read the file; the permission was denied.".into()));
                plan.findings.push(("SIG-TOOL-FAIL", "low"));
            }
            Scenario::DoomLoop => {
                let loop_size = rng.random_range(3..=6);
                s.push(Step::User(pick(rng, ASKS)));
                for _ in 0..loop_size {
                    s.push(fail_tool(n, 0));
                }
                s.push(ok_tool(rng, n));
                s.push(Step::Agent("I used another way to get the numbers; here they are.".into()));
                plan.findings.push(("SIG-DOOM-LOOP", if loop_size >= 5 { "critical" } else { "high" }));
            }
            Scenario::Dissatisfied => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(ok_tool(rng, n));
                s.push(Step::Agent("Here is what I found in the logs.".into()));
                s.push(Step::User(pick(rng, DISSATISFIED)));
                plan.findings.push(("SIG-DISSATISFIED", "high"));
            }
            Scenario::RepeatFail => {
                self.groups += 1;
                let group = self.groups;
                let shared = SharedFailure {
                    name: "exec".into(),
                    params: json!({"command": format!("systemctl restart worker-{group}"), "timeout": 30}),
                    error: format!("Job for worker-{group}.service failed (pid 4{group}). See journalctl -xe."),
                    occurrence: 1,
                };
                let size = rng.random_range(2..=3);
                for occurrence in 2..=size {
                    self.repeats.push_back(SharedFailure { occurrence, ..shared.clone() });
                }
                s.pop();
                self.repeat_session(rng, plan, shared);
                return;
            }
            Scenario::Hallucination => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(fail_tool(n, 1));
                s.push(Step::Agent(pick(rng, CLAIMS)));
                plan.findings.push(("SIG-HALLUCINATION", "critical"));
                plan.findings.push(("SIG-TOOL-FAIL", "low"));
            }
            Scenario::UnverifiedClaim => {
                s.push(Step::User("How full is the disk on the build host?".into()));
                s.push(Step::Agent(format!("The disk usage is {}% on the build host.", 40 + n % 50)));
                s.push(Step::User(pick(rng, THANKS)));
                plan.findings.push(("SIG-UNVERIFIED-CLAIM", "medium"));
            }
            Scenario::UnconfirmedAction => {
                s.push(Step::User(format!("Can you email weekly report {n} to the team?")));
                s.push(Step::Agent(format!("I can send report {n} to team@example.org now. Shall I send it?")));
                // Half the time the user agrees first: no finding.
                let agreed = rng.random_bool(0.5);
                s.push(Step::User(if agreed { pick(rng, CONFIRMATIONS) } else { "Which version of the report is it?".into() }));
                s.push(Step::ToolOk {
                    name: "send_email".into(),
                    params: json!({"to": "team@example.org", "report": n}),
                    result: json!({"sent": true}),
                });
                s.push(Step::Agent("The report is on its way.".into()));
                if !agreed {
                    plan.findings.push(("SIG-UNCONFIRMED-ACTION", "high"));
                }
            }
            Scenario::UnconfirmedAttempt => {
                // The agent tries before asking; the call fails, so nothing changed.
                s.push(Step::User(format!("Can you cancel order {n}?")));
                s.push(Step::ToolFail {
                    name: "cancel_order".into(),
                    params: json!({"order": n}),
                    error: format!("order {n} has already shipped"),
                });
                s.push(Step::Agent(format!(
                    "Order {n} has already shipped, so it cannot be cancelled. Would you like to return it instead?"
                )));
                s.push(Step::User("No, thanks.".into()));
                plan.findings.push(("SIG-UNCONFIRMED-ATTEMPT", "low"));
                plan.findings.push(("SIG-TOOL-FAIL", "low"));
            }
            Scenario::UngroundedValue => {
                // An amount nobody gave.
                s.push(Step::User(format!("Please refund order {n}, it arrived broken.")));
                s.push(Step::Agent(format!("I can refund order {n} to your card. Shall I go ahead?")));
                s.push(Step::User(pick(rng, CONFIRMATIONS)));
                s.push(Step::ToolOk {
                    name: "refund_order".into(),
                    params: json!({"order": n, "amount": 40.25 + (n % 50) as f64}),
                    result: json!({"refunded": true}),
                });
                s.push(Step::Agent(format!("Order {n} is refunded.")));
                plan.findings.push(("SIG-UNGROUNDED-VALUE", "medium"));
            }
            Scenario::UnstatedAction => {
                // A yes to a question that names nothing.
                s.push(Step::User(format!("Please cancel my booking B{n}X.")));
                s.push(Step::Agent("I can do that. Shall I go ahead?".into()));
                s.push(Step::User(pick(rng, CONFIRMATIONS)));
                s.push(Step::ToolOk {
                    name: "cancel_booking".into(),
                    params: json!({"booking": format!("B{n}X")}),
                    result: json!({"status": "ok"}),
                });
                s.push(Step::Agent("It is taken care of.".into()));
                plan.findings.push(("SIG-UNSTATED-ACTION", "medium"));
            }
            Scenario::Unanswered => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(ok_tool(rng, n));
                s.push(Step::Agent(pick(rng, ANSWERS)));
                s.push(Step::User(pick(rng, FOLLOW_UPS)));
                // Only a session that ends (session.end) is known to be left unanswered.
                if plan.framed {
                    plan.findings.push(("SIG-UNANSWERED", "medium"));
                }
            }
            Scenario::ErrorEnding => {
                s.push(Step::User(pick(rng, ASKS)));
                s.push(fail_tool(n, 0));
                plan.findings.push(("SIG-ERROR-ENDING", "high"));
                // A session that ends (session.end) on the agent's work left it unfinished.
                if plan.framed {
                    plan.findings.push(("SIG-LEFT-UNFINISHED", "medium"));
                }
            }
            Scenario::LeftUnfinished => {
                // The agent needs a detail the user does not have at hand.
                s.push(Step::User(format!("Please change the delivery address of order {n}.")));
                s.push(Step::Agent("I can do that. What is the new address, with its zip code?".into()));
                s.push(Step::User(pick(rng, DEFERRALS)));
                s.push(Step::Agent("Of course, I will be here.".into()));
                plan.findings.push(("SIG-LEFT-UNFINISHED", "medium"));
            }
            Scenario::TermsChanged => {
                // The user agrees to a price the agent never checked; the booking is
                // refused, and the agent comes back with another.
                let price = 100 + n % 200;
                s.push(Step::User(format!("Please book me a seat in workshop W{n}.")));
                s.push(Step::ToolOk {
                    name: "get_workshop".into(),
                    params: json!({"workshop": format!("W{n}")}),
                    result: json!({"workshop": format!("W{n}"), "price": price}),
                });
                s.push(Step::Agent(format!("A seat in workshop W{n} costs ${price}. Shall I book it?")));
                s.push(Step::User(pick(rng, CONFIRMATIONS)));
                s.push(Step::ToolFail {
                    name: "book_workshop".into(),
                    params: json!({"workshop": format!("W{n}"), "amount": price}),
                    error: format!("payment amount does not add up, total price is {}", price + 25),
                });
                s.push(Step::Agent(format!("With the booking fee the seat costs ${}. Shall I book it at that price?", price + 25)));
                s.push(Step::User("No, thanks.".into()));
                plan.findings.push(("SIG-TERMS-CHANGED", "medium"));
                plan.findings.push(("SIG-TOOL-FAIL", "low"));
            }
            Scenario::Planning => {
                let topic = pick(rng, TOPICS);
                s.push(Step::User(format!("Regarding the {topic}, which way should we go?")));
                s.push(Step::Agent(format!("We can move the {topic} forward in two steps or in one.")));
                s.push(Step::User(format!("Let's do the {topic} in two steps, starting with part {n}.")));
                s.push(Step::Agent(format!("Good plan. I am waiting for the maintenance window before the {topic} starts.")));
                if rng.random_bool(0.5) {
                    s.push(Step::User(format!("Nice, then the {topic} is solved for now.")));
                    s.push(Step::Agent("You're welcome.".into()));
                }
                plan.decisions += 1;
            }
        }
        s.push(Step::Lifecycle("run.end"));
    }

    /// A session that hits the group's failure, then recovers with another tool.
    fn repeat_session(&mut self, rng: &mut impl Rng, plan: &mut SessionPlan, shared: SharedFailure) {
        let s = &mut plan.steps;
        s.push(Step::User("Please restart the worker.".into()));
        s.push(Step::ToolFail { name: shared.name, params: shared.params, error: shared.error });
        s.push(ok_tool(rng, plan.number));
        s.push(Step::Agent("The restart needs an operator; I opened a ticket for it.".into()));
        match shared.occurrence {
            1 => {}
            2 => plan.findings.push(("SIG-REPEAT-FAIL", "high")),
            _ => plan.findings.push(("SIG-REPEAT-FAIL", "critical")),
        }
    }
}

fn ok_tool(rng: &mut impl Rng, n: u64) -> Step {
    let (name, params, result) = match rng.random_range(0..3) {
        0 => (
            "exec",
            json!({"command": format!("du -sh /srv/data/{n}")}),
            json!({"content": [{"type": "text", "text": "4.0K\t/srv/data"}], "details": {"status": "ok", "exitCode": 0}}),
        ),
        1 => ("read", json!({"path": format!("/srv/app/notes-{n}.md")}), json!("# Notes\nall good")),
        _ => ("web_search", json!({"query": format!("release notes {n}")}), json!({"results": 3})),
    };
    Step::ToolOk { name: name.into(), params, result }
}

/// A failing tool call unique to session `n` (variant picks the failure).
fn fail_tool(n: u64, variant: u8) -> Step {
    match variant {
        0 => Step::ToolFail {
            name: "exec".into(),
            params: json!({"command": format!("cat /etc/app/secret-{n}.conf")}),
            error: format!("cat: /etc/app/secret-{n}.conf: Permission denied"),
        },
        _ => Step::ToolFail {
            name: "deploy".into(),
            params: json!({"target": format!("prod-{n}"), "version": "1.4.2"}),
            error: format!("connect ECONNREFUSED 10.0.{}.{}:443", n % 250, n % 200),
        },
    }
}

fn pick(rng: &mut impl Rng, options: &[&str]) -> String {
    (*options.choose(rng).expect("options")).to_owned()
}

const TOPICS: &[&str] = &["database migration", "security review", "onboarding guide", "release schedule"];
const AGENTS: &[&str] = &["main", "forge", "viola", "scout"];
const ASKS: &[&str] = &[
    "Can you check how big the data folder is?",
    "Kannst du die Release Notes zusammenfassen?",
    "Please look up the latest release notes.",
    "Schau bitte in die Notizen vom Projekt.",
];
const ANSWERS: &[&str] = &["Here is the summary you asked for.", "Hier ist die Zusammenfassung.", "The folder holds 4 KB."];
const THANKS: &[&str] = &["danke, passt", "thanks, perfect", "great, thank you", "super, danke"];
const ASSERTIONS: &[&str] = &["The backup runs every night at 02:00.", "Die Konfiguration liegt unter /etc/app."];
const CORRECTIONS: &[&str] = &[
    "nein, das ist falsch, sie liegt unter /opt/app",
    "that's not right, it runs at 03:00",
    "Das stimmt nicht, schau nochmal nach.",
    "you're wrong, it is the other host",
];
const DISSATISFIED: &[&str] = &["forget it, I'll do it myself", "vergiss es, ich mach's selbst", "this is useless", "lass gut sein"];
const CLAIMS: &[&str] =
    &["Done ✅ the new version is live.", "Erledigt, das Deployment ist durch.", "Successfully deployed to production."];
const CONFIRMATIONS: &[&str] = &["Yes, go ahead.", "Ja, bitte.", "ok, send it"];
const DEFERRALS: &[&str] =
    &["I'll get back to you once I have the zip code.", "Ich melde mich später wieder, sobald ich die Adresse habe."];
const FOLLOW_UPS: &[&str] = &["Can you also check the staging host?", "Kannst du bitte auch den Staging-Host prüfen?"];
const FILLER_ASKS: &[&str] = &["Can you summarize the report?", "Was steht im Bericht?"];
const FILLER_ANSWERS: &[&str] = &["Here is the summary of the report.", "Der Bericht beschreibt drei Punkte."];
