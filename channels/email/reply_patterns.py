# ruff: noqa: RUF001  (the patterns are words of many scripts: Cyrillic, Turkish, fullwidth colons)
"""What marks the start of quoted history in a reply, in the languages mail clients speak.

Four shapes, each a compiled pattern tried on one line (or a few lines joined, for
headers a client wrapped): the "On <date>, <name> wrote:" header, the separator line
("-----Original Message-----", "Forwarded message"), the Outlook header block
("From: ... Sent: ... To: ..."), and the mobile footer ("Sent from my iPhone").
Every pattern is anchored and its repeats are bounded, and reply.py never shows them
a line longer than it allows, so no line can make them backtrack for long.
Data and patterns only; reply.py uses them.
"""

from __future__ import annotations

import re

#: the verb of "<someone> wrote:" per language (mail-parser-reply's languages and more)
WROTE_VERBS = (
    r"wrote|writes|has written",  # en
    r"schrieb|hat geschrieben|geschrieben",  # de
    r"a [ée]crit|a écrit|écrivait",  # fr
    r"escribi[óo]|ha escrito",  # es
    r"ha scritto|scrisse",  # it
    r"schreef|heeft geschreven|het volgende geschreven",  # nl
    r"escreveu",  # pt
    r"написал\(а\)|написала?|пишет|писал\(а\)",  # ru
    r"написав\(ла\)|написала?|написав|пише",  # uk
    r"napisał\(a\)|napisała?|nadesłał",  # pl
    r"napsal\(a\)|napsala?",  # cs
    r"skrev|skriver",  # sv, da, no
    r"kirjoitti",  # fi
    r"írta|írt",  # hu
    r"yazdı",  # tr
    r"έγραψε",  # el
    r"scrie|a scris",  # ro
    r"đã viết|viết",  # vi
)
#: verbs of scripts without spaces between words: no word boundary around them
CJK_VERBS = (
    r"のメッセージ|は書きました|さんは書きました",  # ja
    r"写道|寫道",  # zh
    r"님이 작성하였습니다|님이 작성|님이 씀",  # ko
)
_VERB = rf"(?:(?<!\w)(?:{'|'.join(WROTE_VERBS)})(?!\w)|(?:{'|'.join(CJK_VERBS)}))"
#: "On <date>, <name> wrote:" and its translations: the verb last, or the verb then the
#: name and a colon; a date, an address or a known opening word somewhere before it
WROTE = re.compile(
    r"^(?=.{0,400}$)(?=.*(?:\d|@|^(?:On|Am|Le|El|Il|Op|Em|Den|Dne|Dnia|På|Le)\s))"
    rf".{{2,300}}?{_VERB}(?:[^\n]{{0,120}}[:：])?\s*$",
    re.IGNORECASE,
)
#: looser headers, taken as such only right above a `>` quote: "<name> wrote" (no date,
#: no address, maybe no colon: Android's "---- <name> wrote ----"), "<date> <name> sent:",
#: "<date> <name> <addr>" with no colon (older Gmail), Horde's "Quoting <name>:"
QUOTE_INTRO = re.compile(
    rf"^(?=.{{0,250}}$)(?:.{{1,160}}?(?:{_VERB}|(?<!\w)sent(?!\w))\s?[:：]?"
    r"|(?:quoting|zitat von|citando|citant|cytuję|citaat van)\s.{1,160}?[:：]"
    r"|(?=.*\d).{0,160}<[^<>\s@]{1,80}@[^<>\s]{1,120}>)\s*$",
    re.IGNORECASE,
)
#: how the first line of a header a client wrapped opens: a known word, or a date
HEADER_START = re.compile(
    r"^[-=* ]*(?:(?:On|Am|Le|El|Il|Op|Em|Den|Dne|Dnia|På)\s|.{0,60}\d)", re.IGNORECASE
)
#: the opening word of a header ("On", "Am", "Le" ...) alone
HEADER_OPEN = re.compile(r"^[-=* ]*(?:On|Am|Le|El|Il|Op|Em|Den|Dne|Dnia|På)\s", re.IGNORECASE)
#: Gmail's "2017-11-24 16:32 GMT+01:00 Name <addr>:" and other "<date> <name> <addr>:" lines
DATED_ADDRESS = re.compile(
    r"^(?=.{0,400}$)(?=.*\d).{0,250}<(?:mailto:)?[^<>\s@]{1,80}@[^<>\s]{1,120}>\s*[:：]\s*$"
)

#: the words of "-----Original Message-----" and "Forwarded message" separators
SEPARATOR_WORDS = (
    r"original message|original e-?mail|reply message",
    r"urspr[üu]ngliche nachricht|original-nachricht|originalnachricht",
    r"message d'origine|message original|courriel original",
    r"mensaje original|correo original",
    r"messaggio originale",
    r"oorspronkelijk bericht|origineel bericht",
    r"mensagem original",
    r"исходное сообщение|оригинальное сообщение|пересылаемое сообщение",
    r"вихідне повідомлення|оригінальне повідомлення|пересилане повідомлення",
    r"wiadomość oryginalna|oryginalna wiadomość",
    r"původní zpráva|původní e-mail",
    r"oprindelig meddelelse|opprinnelig melding|ursprungligt meddelande|originalmeddelande",
    r"alkuperäinen viesti|eredeti üzenet|eredeti levél|orijinal mesaj|αρχικό μήνυμα",
    r"元のメッセージ|原始邮件|原始郵件|원본 메시지",
)
FORWARD_WORDS = (
    r"forwarded message|begin forwarded message|forwarded by|forwarded e-?mail",
    r"weitergeleitete nachricht|anfang der weitergeleiteten nachricht",
    r"message transf[ée]r[ée]|début du message réexpédié|message réexpédié",
    r"mensaje reenviado|correo reenviado|mensagem encaminhada|mensagem reencaminhada",
    r"messaggio inoltrato|inizio messaggio inoltrato",
    r"doorgestuurd bericht|begin doorgestuurd bericht",
    r"переслано|пересланное сообщение|пересланий лист",
    r"wiadomość przekazana|przekazana wiadomość|přeposlaná zpráva|videresendt meddelelse",
    r"vidarebefordrat meddelande|välitetty viesti|továbbított üzenet|iletilen mesaj",
    r"転送されたメッセージ|转发的邮件|轉寄的郵件",
)
#: (a backslash too: the HTML converter escapes a line's leading "-" as "\-")
_SEP_EDGE = r"[\s\-_=*>\\]*"
SEPARATOR = re.compile(rf"^{_SEP_EDGE}(?:{'|'.join(SEPARATOR_WORDS)}){_SEP_EDGE}$", re.IGNORECASE)
FORWARD = re.compile(rf"^{_SEP_EDGE}(?:{'|'.join(FORWARD_WORDS)})\W{{0,40}}$", re.IGNORECASE)
#: a ticket system's or forum's marker: "## Please reply above this line ##"
REPLY_ABOVE = re.compile(
    r"^\W{0,12}(?:please\s)?(?:(?:type|write|enter)\s(?:your\s)?)?(?:reply|response)?\s?"
    r"(?:above|over) this line\W{0,12}$",
    re.IGNORECASE,
)
#: a line of dashes or underscores (Outlook's rule above its header block)
RULE = re.compile(r"^\s*\\?(?:[-_=]\s?){8,}\s*$")
#: what a cut may leave at the end of the answer: a short rule, a signature delimiter
LEFTOVER_RULE = re.compile(r"^\\?[-_=*~\s]{2,}$")

#: the "From:" line that opens an Outlook-style header block, per language
FROM_WORDS = (
    r"From|Von|De|Van|Da|Od|Från|Fra|Lähettäjä|Feladó|Kimden|Από|От|Від|Expéditeur|Từ",
    r"差出人|发件人|寄件者|보낸\s?사람|送信者",
)
#: the other lines of such a block: sent, date, to, cc, subject, per language
BLOCK_WORDS = (
    r"Sent|Date|To|Cc|Subject|Reply-To|Importance",
    r"Gesendet|Datum|An|Betreff|Kopie",
    r"Envoyé|Date|À|A|Objet|Cc|Envoyé le",
    r"Enviado|Fecha|Para|Asunto|CC|Enviada|Data|Assunto",
    r"Inviato|Data|A|Oggetto|Cc",
    r"Verzonden|Datum|Aan|Onderwerp",
    r"Wysłano|Data|Do|Temat|DW",
    r"Odesláno|Datum|Komu|Předmět|Kopie",
    r"Skickat|Datum|Till|Ämne|Sendt|Dato|Til|Emne|Kopi",
    r"Lähetetty|Päivämäärä|Vastaanottaja|Aihe|Elküldve|Dátum|Címzett|Tárgy",
    r"Gönderildi|Tarih|Kime|Konu|Στάλθηκε|Προς|Θέμα|Đã gửi|Đến|Chủ đề|Ngày",
    r"Отправлено|Дата|Кому|Тема|Копия|Надіслано|Копія",
    r"送信日時|宛先|件名|日付|发送时间|收件人|主题|日期|抄送",
    r"寄件日期|收件者|主旨|보낸\s?날짜|받는\s?사람|제목|참조",
    r"Organi[sz]ation|Organización|Kopia|Vedhæftet|组织",
)
_LEAD = r"^[\s>*]{0,12}"
_KEY_END = r"\s?\*{0,2}\s?[:：]"
FROM_LINE = re.compile(rf"{_LEAD}(?:{'|'.join(FROM_WORDS)}){_KEY_END}", re.IGNORECASE)
BLOCK_LINE = re.compile(rf"{_LEAD}(?:{'|'.join(BLOCK_WORDS)}){_KEY_END}", re.IGNORECASE)
#: a flattened block on one line: "From: Ann Sent: Monday To: Bob Subject: Hi"
BLOCK_INLINE = re.compile(
    rf"\s\*{{0,2}}(?:Sent|Date|To|Subject|Gesendet|An|Betreff|Envoyé|Objet|Enviado|Asunto"
    rf"|Inviato|Oggetto|Verzonden|Aan|Onderwerp|Enviada|Assunto|Odesláno|Předmět|Sendt|Emne"
    rf"|Skickat|Ämne|Wysłano|Temat|Отправлено|Тема|Надіслано|送信日時|件名|发送时间|主题"
    rf"|보낸\s?날짜|제목){_KEY_END}",
    re.IGNORECASE,
)

#: mobile and webmail footers: "Sent from my iPhone" and its translations
MOBILE_FOOTER = re.compile(
    r"^(?=[^,]{0,70}$)\s*(?:sent from (?:my |mail for |yahoo mail|outlook)|sent with "
    r"|get outlook for "
    r"|von meinem .{1,40} gesendet|gesendet von (?:meinem |mail für )|envoyé de mon |envoyé depuis "
    r"|enviado desde mi |enviado do meu |enviado de meu |inviato da |inviato dal mio "
    r"|verzonden (?:vanaf|met) mijn |verstuurd vanaf mijn |wysłano z |odesláno z "
    r"|skickat från |sendt fra |lähetetty |küldve |отправлено с |надіслано з "
    r"|iphone'umdan gönderildi|从我的.{1,20}发送|내 .{1,20}에서 보냄|iPhoneから送信)",
    re.IGNORECASE,
)
#: greetings that alone are not an answer: "Hi," "Hello Ann," "Hallo," "Bonjour,"
GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|dear|hallo|hej|hei|moin|servus|liebe[rs]?|sehr geehrte[rs]?|bonjour|salut"
    r"|hola|buenos días|ciao|buongiorno|salve|goedemorgen|goedemiddag|beste|ola|olá|oi|cześć|witam"
    r"|dzień dobry|ahoj|dobrý den|привет|здравствуйте|добрый день|привіт|вітаю|szia|hyvä|moi"
    r"|merhaba|こんにちは|您好|你好|안녕하세요)\b[^\n]{0,40}$",
    re.IGNORECASE,
)
#: a footer a server adds below the person's text: a disclaimer heading alone on its line
DISCLAIMER = re.compile(
    r"^\W{0,3}(?:disclaimer|confidentiality notice|haftungsausschluss|avertissement"
    r"|aviso legal|avviso di riservatezza|vertrouwelijkheid)\W{0,3}$",
    re.IGNORECASE,
)
#: a mailing list's footer rule (a long line of underscores, as Mailman writes it)
LIST_RULE = re.compile(r"^_{30,}$")
