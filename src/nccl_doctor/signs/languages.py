"""The reporter's core words in the languages people write their reports in, beyond English
and Chinese (which the signs and prose rows spell themselves): Japanese, Korean, Russian,
Spanish, Portuguese, Vietnamese, Indonesian, German, French and Turkish.

Machine output stays in English whatever language its reporter writes in; what they say of it
does not: that the job hangs, is slow, fails, works with a setting, or runs across several
nodes. Each constant is an alternation, read by the sign or prose row that names it (one home
for each: the hang words serve signs.common.HANG_WORDS and the differential's hang row).
A word that a negation turns around ("не работает", "no funciona", "funktioniert nicht",
"안 돼요") is excluded where it stands.
"""

from __future__ import annotations

#: A letter of any script, as a class compiled in Unicode mode whatever the pattern's flags:
#: the prose rows read with re.ASCII, where \b and \w know no letter beyond ASCII. (A class
#: of character ranges costs Python ~0.5 ms to compile each time it stands in a pattern, and
#: the hang words hold fifty: a category costs nothing.)
_W = r"(?u:[^\W\d_])"
#: A word's start and end: no letter before it, no letter after it.
_S = rf"(?<!{_W})"
_E = rf"(?!{_W})"


#: The job sits there: hangs, freezes, is stuck, stops moving.
HANG_OTHER = (
    # Japanese: hangs, freezes, (the processing) stops ("止まってしまいます"), does not
    # proceed, no response
    r"ハング|フリーズ|固ま(?:る|って|った|り)|止ま(?:って|った|ったまま|る)"
    r"|進ま(?:ない|なく|ず)|応答(?:が)?(?:ない|なし|しない)"
    # Korean: stops / is stuck, unresponsive, hangs, makes no progress
    r"|멈(?:춥니다|춰|춤|추고|췄|추는|춘|춥)|먹통|(?:행|hang)(?:이|에)? 걸|진행이 (?:안|되지)"
    r"|응답(?:이)? 없"
    # Russian: hangs, is stuck
    rf"|{_S}[Зз]авис{_W}*|{_S}[Вв]исит{_E}|{_S}[Вв]иснет{_E}|{_S}[Зз]астр(?:ева|я){_W}*"
    # Spanish and Portuguese: hangs, freezes, stays stuck
    rf"|{_S}se (?:queda|quedan|quedó|cuelga|cuelgan|colgó|congela|congelan|bloquea|traba){_E}"
    rf"|{_S}se queda(?:n)? (?:colgad|bloquead|congelad|parad|trabad)[oa]s?{_E}"
    rf"|{_S}(?:trava|travam|travou|travando){_E}|{_S}fica(?:m)? (?:parad|travad|congelad)[oa]s?{_E}"
    # Vietnamese and Indonesian: hangs, stands still; stuck, stops
    rf"|{_S}bị treo{_E}|{_S}treo (?:ở|tại|luôn|máy|cứng){_E}|{_S}[Đđ]ứng im{_E}|{_S}[Đđ]ơ{_E}"
    rf"|{_S}macet{_E}|{_S}terhenti{_E}|{_S}nge-?hang{_E}|{_S}tidak (?:bergerak|lanjut|jalan){_E}"
    # German, French and Turkish: hangs, freezes; is blocked, freezes; freezes, gets stuck
    rf"|{_S}hängt{_E}|{_S}hängen (?:bleibt|geblieben)|{_S}bleibt (?:{_W}+ )?hängen{_E}"
    rf"|{_S}friert (?:{_W}+ )?ein{_E}"
    rf"|{_S}eingefroren{_E}|{_S}(?:reste|restent|est|sont) (?:{_W}+ )?bloqué{_W}*"
    rf"|{_S}se (?:bloque|fige){_E}"
    rf"|{_S}figé{_W}*|{_S}donuyor{_E}|{_S}donup{_E}|{_S}takıl(?:ıyor|ı kalıyor|dı){_E}"
)

#: The job or a benchmark is slow.
SLOW_OTHER = (
    # Japanese: slow, got slow, too slow; Korean: slow, got slow; Russian: slow(ly), crawls
    r"遅(?:い|く|すぎ)|느(?:려|립니다|림|린)|속도가 (?:안|잘 안) 나"
    rf"|{_S}[Мм]едленн{_W}*|{_S}[Тт]ормоз{_W}*"
    # Spanish, Portuguese and Italian: slow; Vietnamese, Indonesian, German, Turkish: slow
    rf"|{_S}lent[oa]s?{_E}|{_S}chậm{_E}|{_S}lambat{_E}|{_S}langsam{_W}*|{_S}yavaş{_W}*"
    # French: (very, too, much) slow (not English "lent")
    rf"|{_S}(?:très|trop|plus|beaucoup plus|bien plus) lent(?:e|s|es)?{_E}"
)

#: It fails: an error comes up, a failure, a crash (not "no error": "エラーは出ません", "без
#: ошибок", "ohne Fehler", "sans erreur", "không có lỗi", "hata yok").
FAILED_OTHER = (
    # Japanese: failed, an error comes up / occurs, ended abnormally, crashes, falls over
    r"失敗|エラーが(?:出|発生)|異常終了|クラッシュ|落ちて"
    # Korean: an error comes up / occurs, failure, dies
    r"|(?:에러|오류)(?:가|이)? ?(?:나|납니다|났|발생|떠|뜹|뜨)|실패|죽(?:어|습니다|었|는)"
    # Russian: error, fails, crashed; Spanish and Portuguese: fails, crashes
    rf"|(?<!без )(?<!Без ){_S}[Оо]шибк{_W}*|{_S}[Пп]ада(?:ет|ют|л){_W}*|{_S}[Уу]пал{_W}*"
    rf"|{_S}[Вв]ылета{_W}*"
    rf"|{_S}fall(?:a|an|ó){_E}|{_S}falha{_W}*|(?<!sem ){_S}erro{_E}|{_S}se cae{_E}|{_S}crashea{_W}*"
    # Vietnamese, Indonesian; German, French, Turkish
    rf"|(?<!không )(?<!không có ){_S}lỗi{_E}|{_S}gagal{_E}|(?<!ohne ){_S}Fehler{_W}*"
    rf"|{_S}schlägt (?:{_W}+ )?fehl{_E}"
    rf"|{_S}stürzt (?:{_W}+ )?ab{_E}|{_S}abgestürzt{_E}|(?<!sans ){_S}erreur{_W}*"
    rf"|{_S}[ÉéEe]chou{_W}*"
    rf"|{_S}plant(?:e|ent|é){_E}|{_S}hata(?!sız| yok){_W}*|{_S}[Çç]ök{_W}*"
)

#: It works (after a setting): the outcome words, none turned around by a negation before or
#: after it.
WORKED_OTHER = (
    # Japanese: works, ran, solved; Korean: runs, works, solved (not 안 돼요: "does not work")
    r"動(?:く|いた|きました|きます|作(?:する|した|しました))|解決(?:した|しました|できた)"
    r"|通(?:る|った|りました)"
    r"|(?<!안 )(?:돌아가(?!지)(?:요|고|네요)?|됩니다|잘 (?:돼|됩니다|돌아)|해결(?:됐|되었|됨))"
    # Russian: works, started working, helped (not не работает)
    rf"|(?<!не )(?<!Не ){_S}(?:[Рр]аботает|[Зз]аработал{_W}*|[Пп]омогл{_W}*|[Пп]омогает){_E}"
    # Spanish and Portuguese: works, worked (not no/não funciona)
    rf"|(?<!no )(?<!não ){_S}funcion(?:a|an|ó|ou|am){_E}"
    # Vietnamese and Indonesian: then it runs, runs fine (not không chạy được); succeeded
    rf"|(?<!không ){_S}(?:chạy được|thì chạy|chạy bình thường|chạy ngon){_E}"
    rf"|(?<!tidak ){_S}(?:berhasil|bisa jalan|jalan normal){_E}"
    # German (not funktioniert nicht), French (not ne fonctionne pas), Turkish
    rf"|{_S}(?:funktioniert|läuft){_E}(?!(?: {_W}+){{0,2}} nicht)"
    rf"|(?<!ne )(?<!n'){_S}(?:fonctionne|marche){_E}(?!(?: {_W}+)? pas)"
    rf"|{_S}(?:çalışıyor|düzeldi){_E}"
)

#: Several nodes: the job runs on more than one machine.
MULTI_NODE_OTHER = (
    # Japanese: multi-node, several nodes, 2 (to 9) nodes, between nodes
    r"マルチノード|複数(?:の)?ノード|[2-9２-９]\s?ノード|ノード間"
    # Korean: multi-node, several nodes, 2 nodes, between nodes
    r"|(?:멀티|다중|여러|두|[2-9]) ?노드|노드 간"
    # Russian: several/two nodes, multi-node
    rf"|{_S}[Мм]ногоузл{_W}*|{_S}(?:[Нн]ескольк{_W}*|[Дд]вух|два|2) (?:узл|нод){_W}*"
    # Spanish and Portuguese: several/two nodes, multinode
    rf"|{_S}multinodo{_E}"
    rf"|{_S}(?:varios|dos|múltiples|vários|dois|múltiplos|[2-9]) (?:nodos|nós){_E}"
    # Vietnamese, Indonesian, German, French, Turkish
    rf"|{_S}(?:nhiều|hai|beberapa|dua|mehrere|zwei|plusieurs|deux|iki|birden fazla) "
    rf"(?:node|nodes|Knoten|nœuds|noeuds|düğüm){_E}|{_S}multi-?nœuds?{_E}"
)

#: The driver's kernel module and its libraries do not match, in words: Japanese and Korean
#: (the driver and the library (versions) do not match).
DRIVER_HALVES_OTHER = (
    r"ドライバー?\s?(?:と|/)\s?ライブラリ[^。\n]{0,12}(?:一致し(?:てい)?な|不一致|合(?:ってい)?な)"
    r"|드라이버\s?(?:와|랑|/)\s?라이브러리[^.\n]{0,12}(?:일치하지 않|불일치|맞지 않)"
)

#: The driver's packages moved to another version: Japanese (went up, were updated or
#: upgraded), Korean (updated, upgraded).
DRIVER_UPGRADED_OTHER = (
    r"(?:ドライバー?|nvidia-driver[\w.-]{0,40})[^。\n]{0,50}(?:上が|アップデート|アップグレード|更新さ)"
    r"|(?:드라이버|nvidia-driver[\w.-]{0,40})[^.\n]{0,30}(?:업데이트|업그레이드)"
)

#: The machine not rebooted (since): Japanese and Korean (not a wish to avoid one:
#: "再起動せずに直したい", "I'd rather fix it without rebooting").
NOT_REBOOTED_OTHER = (
    r"再起動(?:は|を)?(?:していません|していない|してない|しておらず)"
    r"|재부팅(?:을|은|는)?\s?(?:하지 않|안 했|안 하|안 한)"
)
