//! Every language pack: a sample of each category matches, neutral text does not, and a
//! pack is only active when chosen.

use tracelake::udfs::{Category, Patterns};

/// (language, correction, dissatisfaction, completion claim, question, system-state claim, neutral)
const SAMPLES: [(&str, &str, &str, &str, &str, &str, &str); 10] = [
    ("en", "that's wrong", "forget it", "I have deployed it", "shall I restart it", "the service is running", "The weather is nice."),
    ("de", "nein, das ist falsch", "vergiss es", "erledigt", "soll ich neu starten", "es gibt 3 fehler im log", "Das Wetter ist schön."),
    ("fr", "c'est faux", "laisse tomber", "c'est fait", "dois-je redémarrer", "il y a 3 erreurs dans le journal", "Il fait beau."),
    (
        "es",
        "eso es incorrecto",
        "olvídalo",
        "listo, desplegado",
        "¿quieres que lo reinicie",
        "hay 3 errores en el registro",
        "Hace buen tiempo.",
    ),
    ("pt", "está errado", "esquece", "pronto, corrigido", "quer que eu reinicie", "há 3 erros no log", "O tempo está bom."),
    ("it", "è sbagliato", "lascia perdere", "fatto, risolto", "vuoi che lo riavvii", "ci sono 3 errori nel log", "Il tempo è bello."),
    ("zh", "不对，你搞错了", "算了，我自己来", "已完成部署", "需要我重启吗", "有 3 个错误", "今天天气很好。"),
    ("ja", "違います", "もういい、自分でやる", "デプロイしました", "再起動しましょうか", "3 件のエラーがあります", "今日はいい天気です。"),
    ("ko", "틀렸어요", "제가 직접 할게요", "배포했습니다", "재시작할까요", "3 개의 오류가 있습니다", "오늘 날씨가 좋네요."),
    (
        "ru",
        "это неправильно",
        "забудь",
        "готово, исправлено",
        "должен ли я перезапустить",
        "есть 3 ошибки в логе",
        "Сегодня хорошая погода.",
    ),
];

#[test]
fn every_pack_recognizes_its_language() {
    for (code, correction, dissatisfaction, claim, question, state, neutral) in SAMPLES {
        let p = Patterns::new(&[code.to_owned()]).unwrap();
        assert!(p.is(Category::Correction, correction), "{code}: correction {correction:?}");
        assert!(p.is(Category::Dissatisfaction, dissatisfaction), "{code}: dissatisfaction {dissatisfaction:?}");
        assert!(p.is(Category::CompletionClaim, claim), "{code}: claim {claim:?}");
        assert!(p.is(Category::Question, question), "{code}: question {question:?}");
        assert!(p.is(Category::SystemStateClaim, state), "{code}: state claim {state:?}");
        for category in [Category::Correction, Category::Dissatisfaction, Category::CompletionClaim, Category::SystemStateClaim] {
            assert!(!p.is(category, neutral), "{code}: {neutral:?} is not {category:?}");
        }
    }
}

/// (language, a confirmation in ordinary words, an answer that holds off)
const CONSENT: [(&str, &str, &str); 10] = [
    ("en", "That works, please proceed.", "Wait, let me think about it."),
    ("de", "Klingt gut, machen Sie weiter.", "Moment, lass mich überlegen."),
    ("fr", "Ça marche, allez-y.", "Attendez, je vais réfléchir."),
    ("es", "Me parece bien, adelante.", "Espera, déjame pensar."),
    ("pt", "Tudo bem, pode continuar.", "Espere, deixe-me pensar."),
    ("it", "Va bene, procedi.", "Aspetta, fammi pensare."),
    ("zh", "好的，请继续。", "等等，让我想想。"),
    ("ja", "それでいいです、進めてください。", "ちょっと待って、考えさせて。"),
    ("ko", "좋아요, 진행해 주세요.", "잠깐만요, 생각해 볼게요."),
    ("ru", "Хорошо, давайте.", "Подождите, дайте подумать."),
];

#[test]
fn every_pack_tells_consent_from_holding_off() {
    assert_each_pack_tells_apart(Category::Confirmation, &CONSENT);
}

/// (language, a user leaving to come back later, a goodbye that only offers to come back)
const DEFERRAL: [(&str, &str, &str); 10] = [
    ("en", "I'll get back to you once I have the order number.", "Thanks! I'll reach out if I need anything else."),
    ("de", "Ich melde mich später wieder, sobald ich die Nummer habe.", "Danke, das war's."),
    ("fr", "Je reviens vers vous dès que j'aurai le numéro.", "Merci, c'est tout."),
    ("es", "Vuelvo más tarde, en cuanto tenga el número.", "Gracias, eso es todo."),
    ("pt", "Volto mais tarde, assim que eu tiver o número.", "Obrigado, é só isso."),
    ("it", "Tornerò più tardi, appena avrò il numero.", "Grazie, è tutto."),
    ("zh", "等我找到订单号再联系你。", "谢谢，就这些。"),
    ("ja", "注文番号が分かり次第、後でまた連絡します。", "ありがとう、以上です。"),
    ("ko", "주문 번호를 확인하고 다시 연락할게요.", "감사합니다, 그게 다예요."),
    ("ru", "Свяжусь с вами позже, как только найду номер.", "Спасибо, это всё."),
];

#[test]
fn every_pack_tells_leaving_for_later_from_a_goodbye() {
    assert_each_pack_tells_apart(Category::Deferral, &DEFERRAL);
}

/// (language, a sum charged to the user, a refund)
const CHARGE: [(&str, &str, &str); 10] = [
    ("en", "The $100 has been charged to your card.", "A refund of $20 is on its way."),
    ("de", "Die 100 € wurden Ihrer Karte belastet.", "Die 20 € werden Ihnen erstattet."),
    ("fr", "Les 100 € ont été débités de votre carte.", "Les 20 € vous seront remboursés."),
    ("es", "Se han cobrado 100 € en su tarjeta.", "Le reembolsaremos 20 €."),
    ("pt", "Foram cobrados 100 € no seu cartão.", "Os 20 € serão reembolsados."),
    ("it", "I 100 € sono stati addebitati sulla sua carta.", "I 20 € le saranno rimborsati."),
    ("zh", "已从您的卡中扣款100美元。", "20美元将退还给您。"),
    ("ja", "カードに100ドルが請求されました。", "20ドルが返金されます。"),
    ("ko", "카드로 100달러가 결제되었습니다.", "20달러가 환불됩니다."),
    ("ru", "С вашей карты списано 100 €.", "Вам вернут 20 €."),
];

#[test]
fn every_pack_tells_a_charge_from_a_refund() {
    assert_each_pack_tells_apart(Category::Charge, &CHARGE);
}

/// In each row's language pack, and with every pack chosen, the first text is of
/// `category` and the second is not.
fn assert_each_pack_tells_apart(category: Category, rows: &[(&str, &str, &str)]) {
    let every = every_pack();
    for (code, is, is_not) in rows {
        let p = Patterns::new(&[(*code).to_owned()]).unwrap();
        for (packs, p) in [(*code, &p), ("all", &every)] {
            assert!(p.is(category, is), "{packs}: {is:?} is {category:?}");
            assert!(!p.is(category, is_not), "{packs}: {is_not:?} is not {category:?}");
        }
    }
}

fn every_pack() -> Patterns {
    Patterns::new(&SAMPLES.iter().map(|s| s.0.to_owned()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn a_pattern_of_one_language_does_not_count_in_a_text_of_another() {
    let every = every_pack();
    let default = Patterns::default_languages();
    // Spanish and Italian open a correction with "no"; German waits a "Moment".
    assert!(!every.is(Category::Correction, "No, I don't want to be transferred to another agent."));
    assert!(!every.is(Category::Correction, "No, I meant the flight on the 15th, not the 14th."));
    for p in [&default, &every] {
        assert!(p.is(Category::Confirmation, "Yes, at the moment that works for me."));
        assert!(p.is(Category::Refusal, "Hold on a moment, let me check with my wife."), "English holds off in its own words");
    }
    // Texts of those languages keep their patterns among every pack.
    assert!(every.is(Category::Correction, "No, eso no es lo que pedí, quiero otro vuelo."));
    assert!(every.is(Category::Correction, "No, non è quello che ho chiesto, voglio un altro volo."));
    assert!(every.is(Category::Refusal, "Moment, lass mich das mit meiner Frau besprechen."));
    // Texts too short to tell keep every pack's reading.
    assert!(every.is(Category::ShortNegative, "No.") && every.is(Category::ShortNegative, "Nein!"));
    assert!(every.is(Category::Correction, "No, that one."), "too short to tell: the Spanish pattern counts");
}

#[test]
fn a_pack_is_active_only_when_chosen() {
    let default = Patterns::default_languages();
    assert!(default.is(Category::Correction, "nein, das ist falsch") && default.is(Category::Correction, "that's wrong"));
    assert!(!default.is(Category::Correction, "это неправильно"), "ru is not in the default en + de");
    assert!(!default.is(Category::Dissatisfaction, "算了，我自己来"));
    let all: Vec<String> = SAMPLES.iter().map(|s| s.0.to_owned()).collect();
    let every = Patterns::new(&all).unwrap();
    assert!(every.is(Category::Correction, "это неправильно") && every.is(Category::Dissatisfaction, "算了，我自己来"));
}

#[test]
fn the_config_chooses_the_packs() {
    use tracelake::config::Config;
    let langs =
        |v: serde_json::Value| Config::resolve(&serde_json::json!({"traceAnalyzer": {}, "patterns": {"language": v}})).unwrap().languages;
    assert_eq!(langs(serde_json::json!("both")), ["en", "de"]);
    assert_eq!(langs(serde_json::json!("fr")), ["fr"]);
    assert_eq!(langs(serde_json::json!("all")).len(), 10);
    assert_eq!(langs(serde_json::json!(["ja", "ko"])), ["ja", "ko"]);
    assert_eq!(Config::default().languages, ["en", "de"]);
}
