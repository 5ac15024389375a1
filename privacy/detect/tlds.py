"""Top-level domains a mail address can end with: every two-letter country code, and the
generic and brand domains seen in use. An address ending in anything else is code or a file
(``@click.argument``, ``pkg@1.0.2.patch``), not a mailbox.

The list is of domains delegated by IANA (root zone database), picked for use; a real address
on a generic domain missing here is read as no address at all, so the list errs long.
"""

from __future__ import annotations

_GENERIC_TLDS_TEXT = """
    com net org edu gov mil int arpa info biz name pro aero coop museum mobi jobs travel tel cat
    asia post xxx app dev page new web site online store shop blog cloud tech digital email
    academy accountant accountants actor ads adult africa agency airforce amsterdam analytics
    apartments archi army art associates attorney auction audio auto autos baby band bank bar
    barcelona bargains basketball bayern beauty beer berlin best bet bible bid bike bingo bio
    black blackfriday blue bond boston boutique box broker brussels build builders business buy
    buzz cab cafe cam camera camp capetown capital car cards care career careers cars casa
    cash casino catering center ceo charity chat cheap christmas church city claims cleaning
    click clinic clothing club coach codes coffee college cologne community company compare
    computer condos construction consulting contact contractors cooking cool country coupons
    courses credit creditcard cricket cruises cymru dance data date dating day deals degree
    delivery democrat dental dentist design diamonds diet direct directory discount doctor
    docs dog domains download earth eco education energy engineer engineering enterprises
    equipment estate eus events exchange expert exposed express fail faith family fan fans
    farm fashion film final finance financial fish fit fitness flights florist flowers food
    football forsale foundation free frl fun fund furniture futbol fyi gallery game games
    garden gay gent gift gifts gives glass global globo gmbh gold golf goog google graphics
    gratis green gripe group guide guitars guru hamburg haus health healthcare help hiphop
    hiv hockey holdings holiday homes horse hospital host hosting hot house how icu immo
    immobilien inc industries ink institute insurance insure international investments irish
    istanbul jetzt jewelry joburg juegos kaufen kim kitchen kiwi koeln land lat law lawyer
    lease legal lgbt life lighting limited limo link live llc llp loan loans lol london love
    ltd luxury madrid maison management market marketing mba media medical meet melbourne
    memorial men menu miami microsoft moda moe mom money monster mortgage moscow motorcycles
    movie music navy network news nexus ngo ninja nrw nyc okinawa one ong onl ooo organic
    ovh paris partners parts party pet phd photo photography photos pics pictures pink pizza
    place plumbing plus poker porn press productions prof promo properties property protection
    pub quebec quest racing radio realestate realty recipes red rehab reise reisen ren rent
    rentals repair report republican rest restaurant review reviews rich rio rip rocks rodeo
    ruhr run saarland sale salon sarl school schule science scot security services sex sexy
    shoes shopping show singles ski skin soccer social software solar solutions space spa
    sport srl storage stream studio study style sucks supplies supply support surf surgery
    swiss sydney systems taipei tattoo tax taxi team technology tennis theater theatre tickets
    tienda tips tires tirol today tokyo tools top tours town toys trade trading training tube
    uno university uol vacations vegas ventures vet viajes video villas vin vip vision vlaanderen
    vodka vote voting voto voyage wales wang watch webcam website wedding wien wiki win wine
    work works world wtf xin xyz yoga zone zip bom
"""
GENERIC_TLDS = frozenset(_GENERIC_TLDS_TEXT.split())


def is_mail_tld(label: str) -> bool:
    """Whether ``label`` (lower case) can end a mail address.

    >>> is_mail_tld("br"), is_mail_tld("dev"), is_mail_tld("argument"), is_mail_tld("patch")
    (True, True, False, False)
    """
    return (len(label) == 2 and label.isalpha()) or label in GENERIC_TLDS
