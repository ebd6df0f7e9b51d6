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

#: A letter of the scripts below (Latin with its accents, Vietnamese's, Cyrillic): the prose
#: rows read with re.ASCII, where \b and \w know none of them.
_LETTER = "A-Za-z\u00c0-\u024f\u1e00-\u1eff\u0400-\u04ff"
_W = f"[{_LETTER}]"
#: A word's edge in those scripts (before or after it, no letter).
_B = f"(?:(?<![{_LETTER}])(?=[{_LETTER}])|(?<=[{_LETTER}])(?![{_LETTER}]))"


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
    rf"|{_B}[Зз]авис{_W}*|{_B}[Вв]исит{_B}|{_B}[Вв]иснет{_B}|{_B}[Зз]астр(?:ева|я){_W}*"
    # Spanish and Portuguese: hangs, freezes, stays stuck
    rf"|{_B}se (?:queda|quedan|quedó|cuelga|cuelgan|colgó|congela|congelan|bloquea|traba){_B}"
    rf"|{_B}se queda(?:n)? (?:colgad|bloquead|congelad|parad|trabad)[oa]s?{_B}"
    rf"|{_B}(?:trava|travam|travou|travando){_B}|{_B}fica(?:m)? (?:parad|travad|congelad)[oa]s?{_B}"
    # Vietnamese and Indonesian: hangs, stands still; stuck, stops
    rf"|{_B}bị treo{_B}|{_B}treo (?:ở|tại|luôn|máy|cứng){_B}|{_B}[Đđ]ứng im{_B}|{_B}[Đđ]ơ{_B}"
    rf"|{_B}macet{_B}|{_B}terhenti{_B}|{_B}nge-?hang{_B}|{_B}tidak (?:bergerak|lanjut|jalan){_B}"
    # German, French and Turkish: hangs, freezes; is blocked, freezes; freezes, gets stuck
    rf"|{_B}hängt{_B}|{_B}hängen (?:bleibt|geblieben)|{_B}bleibt (?:{_W}+ )?hängen{_B}"
    rf"|{_B}friert (?:{_W}+ )?ein{_B}"
    rf"|{_B}eingefroren{_B}|{_B}(?:reste|restent|est|sont) (?:{_W}+ )?bloqué{_W}*"
    rf"|{_B}se (?:bloque|fige){_B}"
    rf"|{_B}figé{_W}*|{_B}donuyor{_B}|{_B}donup{_B}|{_B}takıl(?:ıyor|ı kalıyor|dı){_B}"
)

#: The job or a benchmark is slow.
SLOW_OTHER = (
    # Japanese: slow, got slow, too slow; Korean: slow, got slow; Russian: slow(ly), crawls
    r"遅(?:い|く|すぎ)|느(?:려|립니다|림|린)|속도가 (?:안|잘 안) 나"
    rf"|{_B}[Мм]едленн{_W}*|{_B}[Тт]ормоз{_W}*"
    # Spanish, Portuguese and Italian: slow; Vietnamese, Indonesian, German, Turkish: slow
    rf"|{_B}lent[oa]s?{_B}|{_B}chậm{_B}|{_B}lambat{_B}|{_B}langsam{_W}*|{_B}yavaş{_W}*"
    # French: (very, too, much) slow (not English "lent")
    rf"|{_B}(?:très|trop|plus|beaucoup plus|bien plus) lent(?:e|s|es)?{_B}"
)

#: It fails: an error comes up, a failure, a crash (not "no error": "エラーは出ません", "без
#: ошибок", "ohne Fehler", "sans erreur", "không có lỗi", "hata yok").
FAILED_OTHER = (
    # Japanese: failed, an error comes up / occurs, ended abnormally, crashes, falls over
    r"失敗|エラーが(?:出|発生)|異常終了|クラッシュ|落ちて"
    # Korean: an error comes up / occurs, failure, dies
    r"|(?:에러|오류)(?:가|이)? ?(?:나|납니다|났|발생|떠|뜹|뜨)|실패|죽(?:어|습니다|었|는)"
    # Russian: error, fails, crashed; Spanish and Portuguese: fails, crashes
    rf"|(?<!без )(?<!Без ){_B}[Оо]шибк{_W}*|{_B}[Пп]ада(?:ет|ют|л){_W}*|{_B}[Уу]пал{_W}*"
    rf"|{_B}[Вв]ылета{_W}*"
    rf"|{_B}fall(?:a|an|ó){_B}|{_B}falha{_W}*|(?<!sem ){_B}erro{_B}|{_B}se cae{_B}|{_B}crashea{_W}*"
    # Vietnamese, Indonesian; German, French, Turkish
    rf"|(?<!không )(?<!không có ){_B}lỗi{_B}|{_B}gagal{_B}|(?<!ohne ){_B}Fehler{_W}*"
    rf"|{_B}schlägt (?:{_W}+ )?fehl{_B}"
    rf"|{_B}stürzt (?:{_W}+ )?ab{_B}|{_B}abgestürzt{_B}|(?<!sans ){_B}erreur{_W}*"
    rf"|{_B}[ÉéEe]chou{_W}*"
    rf"|{_B}plant(?:e|ent|é){_B}|{_B}hata(?!sız| yok){_W}*|{_B}[Çç]ök{_W}*"
)

#: It works (after a setting): the outcome words, none turned around by a negation before or
#: after it.
WORKED_OTHER = (
    # Japanese: works, ran, solved; Korean: runs, works, solved (not 안 돼요: "does not work")
    r"動(?:く|いた|きました|きます|作(?:する|した|しました))|解決(?:した|しました|できた)"
    r"|通(?:る|った|りました)"
    r"|(?<!안 )(?:돌아가(?!지)(?:요|고|네요)?|됩니다|잘 (?:돼|됩니다|돌아)|해결(?:됐|되었|됨))"
    # Russian: works, started working, helped (not не работает)
    rf"|(?<!не )(?<!Не ){_B}(?:[Рр]аботает|[Зз]аработал{_W}*|[Пп]омогл{_W}*|[Пп]омогает){_B}"
    # Spanish and Portuguese: works, worked (not no/não funciona)
    rf"|(?<!no )(?<!não ){_B}funcion(?:a|an|ó|ou|am){_B}"
    # Vietnamese and Indonesian: then it runs, runs fine (not không chạy được); succeeded
    rf"|(?<!không ){_B}(?:chạy được|thì chạy|chạy bình thường|chạy ngon){_B}"
    rf"|(?<!tidak ){_B}(?:berhasil|bisa jalan|jalan normal){_B}"
    # German (not funktioniert nicht), French (not ne fonctionne pas), Turkish
    rf"|{_B}(?:funktioniert|läuft){_B}(?!(?: {_W}+){{0,2}} nicht)"
    rf"|(?<!ne )(?<!n'){_B}(?:fonctionne|marche){_B}(?!(?: {_W}+)? pas)"
    rf"|{_B}(?:çalışıyor|düzeldi){_B}"
)

#: Several nodes: the job runs on more than one machine.
MULTI_NODE_OTHER = (
    # Japanese: multi-node, several nodes, 2 (to 9) nodes, between nodes
    r"マルチノード|複数(?:の)?ノード|[2-9２-９]\s?ノード|ノード間"
    # Korean: multi-node, several nodes, 2 nodes, between nodes
    r"|(?:멀티|다중|여러|두|[2-9]) ?노드|노드 간"
    # Russian: several/two nodes, multi-node
    rf"|{_B}[Мм]ногоузл{_W}*|{_B}(?:[Нн]ескольк{_W}*|[Дд]вух|два|2) (?:узл|нод){_W}*"
    # Spanish and Portuguese: several/two nodes, multinode
    rf"|{_B}multinodo{_B}"
    rf"|{_B}(?:varios|dos|múltiples|vários|dois|múltiplos|[2-9]) (?:nodos|nós){_B}"
    # Vietnamese, Indonesian, German, French, Turkish
    rf"|{_B}(?:nhiều|hai|beberapa|dua|mehrere|zwei|plusieurs|deux|iki|birden fazla) "
    rf"(?:node|nodes|Knoten|nœuds|noeuds|düğüm){_B}|{_B}multi-?nœuds?{_B}"
)
