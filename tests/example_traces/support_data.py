"""The support shop's data: customers, products, knowledge base, past chats, CPF and CNPJ."""

from __future__ import annotations

import json
import random
import unicodedata
from typing import Any


def cpf_check_digits(base: str) -> str:
    """The two check digits of a CPF whose first nine digits are ``base``.

    >>> cpf_check_digits("123456789")
    '09'
    """
    digits = [int(char) for char in base]
    for _ in range(2):
        weight = len(digits) + 1
        remainder = sum(d * (weight - i) for i, d in enumerate(digits)) % 11
        digits.append(0 if remainder < 2 else 11 - remainder)
    return f"{digits[-2]}{digits[-1]}"


FIRST_NAMES = ("Mariana", "Juliana", "Camila", "Fernanda", "Patrícia", "Luciana")


LAST_NAMES = ("Albuquerque", "Nogueira", "Figueiredo", "Cavalcanti", "Sampaio", "Brandão")


PRODUCTS = (
    ("CAF-ITA-300", "Cafeteira italiana 300 ml", "189.90"),
    ("TAC-CRI-4", "Kit 4 taças de cristal", "149.90"),
    ("MOE-CAF-MAN", "Moedor de café manual", "229.00"),
    ("PAN-ANT-5", "Jogo de panelas antiaderente 5 peças", "599.90"),
    ("LUM-MES-ART", "Luminária de mesa articulada", "159.90"),
    ("GAR-TER-1L", "Garrafa térmica 1 L", "119.90"),
    ("TOA-ALG-4", "Conjunto de toalhas de algodão 4 peças", "139.90"),
    ("TAP-SIS-150", "Tapete de sisal 1,5 x 2 m", "389.00"),
    ("FON-BT-200", "Fone de ouvido Bluetooth", "279.90"),
    ("JAR-VID-15", "Jarra de vidro 1,5 L", "59.90"),
    ("FAQ-INX-24", "Faqueiro inox 24 peças", "249.90"),
    ("APA-JAN-20", "Aparelho de jantar 20 peças", "459.90"),
    ("CHA-ELE-17", "Chaleira elétrica 1,7 L", "199.90"),
    ("PAN-PRE-45", "Panela de pressão 4,5 L", "289.90"),
    ("POT-HER-10", "Kit potes herméticos 10 peças", "99.90"),
    ("TRA-PLU", "Travesseiro de plumas", "179.90"),
    ("EDR-QUE", "Edredom queen 200 fios", "329.90"),
    ("FIL-BAR", "Filtro de barro 4 velas", "219.90"),
)


STATUSES = ("entregue", "entregue", "entregue", "entregue", "cancelado", "devolvido")


CITY = ("São Paulo", "SP")


KB_ARTICLES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "KB-101": (
        "Atraso na entrega: como tratar",
        (
            (
                "Quando é atraso",
                "Consideramos atraso quando a data prevista informada na confirmação do pedido "
                "(e na página Meus pedidos) passou e o status não mudou para Entregue. O prazo é "
                "contado em dias úteis a partir da aprovação do pagamento, não da data da compra. "
                "Pagamentos aprovados depois das 14h contam a partir do dia útil seguinte. "
                "Feriados estaduais e municipais da cidade de destino também são descontados.",
            ),
            (
                "Primeiros passos",
                "1. Confirme a identidade do cliente (CPF ou número do pedido, mais o e-mail do "
                "cadastro). 2. Consulte o rastreio pelo código do pedido. 3. Se o objeto está "
                "parado há mais de 3 dias úteis no mesmo centro de distribuição, abra um chamado "
                "do tipo atraso_transportadora; o SLA de resposta da transportadora é de 48 horas "
                "úteis. 4. Informe ao cliente o protocolo e o prazo de retorno. Não prometa data "
                "de entrega que a transportadora não confirmou.",
            ),
            (
                "Compensações",
                "Atrasos acima de 5 dias úteis dão direito a um cupom de frete grátis na próxima "
                "compra, gerado ao fechar o chamado. Atrasos acima de 15 dias úteis, ou objeto "
                "sem movimentação por 10 dias úteis, permitem oferecer reenvio ou cancelamento "
                "com reembolso integral, à escolha do cliente. Clientes do segmento ouro podem "
                "receber o cupom a partir de 3 dias úteis de atraso.",
            ),
            (
                "Ocorrências conhecidas",
                "Cajamar/SP: volume acima do normal desde a campanha de outubro; a RápidoLog "
                "informou normalização em até 5 dias úteis e prioriza chamados abertos com "
                "prioridade alta. Contagem/MG: greve parcial encerrada em 24/10, fila "
                "remanescente de cerca de 2 dias. Recife/PE: sem ocorrências.",
            ),
        ),
    ),
    "KB-117": (
        "Cobrança em duplicidade no cartão de crédito",
        (
            (
                "Pré-autorização ou cobrança?",
                "Na aprovação do pedido o emissor faz uma pré-autorização, que aparece no "
                "aplicativo do banco como compra pendente. Se o pagamento for reprocessado (por "
                "exemplo, depois de um tempo esgotado no gateway), pode surgir uma segunda "
                "pré-autorização, que cai sozinha em até 7 dias. Só há duplicidade quando as duas "
                "transações estão capturadas: no sistema de pagamentos, status capturada e NSUs "
                "diferentes para o mesmo pedido.",
            ),
            (
                "Como verificar",
                "Consulte os pagamentos do pedido. Se houver duas transações capturadas, consulte "
                "cada NSU no gateway para confirmar o valor e a data de captura. Pergunte ao "
                "cliente se as duas aparecem como confirmadas (não pendentes) no aplicativo do "
                "banco. Não peça foto da fatura nem número completo do cartão.",
            ),
            (
                "O que fazer",
                "Confirmada a duplicidade, solicite o estorno da transação mais recente pelo "
                "sistema de pagamentos, informando o NSU. O estorno é sempre no mesmo meio de "
                "pagamento; nunca ofereça depósito em conta ou Pix como alternativa. Registre "
                "nota no cadastro com o protocolo.",
            ),
        ),
    ),
    "KB-118": (
        "Prazos de estorno por forma de pagamento",
        (
            (
                "Cartão de crédito",
                "O estorno é enviado ao emissor em até 2 dias úteis. Dependendo da data de "
                "fechamento, o crédito aparece na fatura atual ou na seguinte (até 2 faturas). "
                "Parcelamentos são estornados parcela por parcela, na mesma quantidade.",
            ),
            (
                "Pix e boleto",
                "Pix: devolução para a mesma chave de origem em até 5 dias úteis. Boleto: "
                "crédito na conta bancária indicada pelo cliente em até 10 dias úteis, depois de "
                "validada a titularidade (o CPF da conta deve ser o do titular do pedido).",
            ),
            (
                "Vale-presente e saldo",
                "Valores pagos com vale-presente voltam como saldo na conta do cliente na hora. "
                "Saldo não pode ser convertido em dinheiro.",
            ),
        ),
    ),
    "KB-140": (
        "Atualização de endereço e dados cadastrais",
        (
            (
                "O que o atendimento pode alterar",
                "Endereços de entrega, telefone e preferências de contato podem ser alterados no "
                "chat depois da confirmação de identidade. Nome e CPF só mudam com documento, "
                "pelo formulário de correção cadastral. O e-mail de login só pode ser alterado "
                "pelo próprio cliente, no aplicativo.",
            ),
            (
                "Pedidos em andamento",
                "A alteração vale para pedidos novos. Pedidos já despachados seguem para o "
                "endereço original; para redirecionar, abra chamado com a transportadora (taxa "
                "pode ser cobrada).",
            ),
            (
                "Como validar o CEP",
                "Consulte o CEP antes de gravar e confirme com o cliente logradouro, bairro e "
                "cidade retornados. Complemento e número são digitados pelo cliente.",
            ),
        ),
    ),
    "KB-152": (
        "Clube do Café: pausa, cancelamento e multa",
        (
            (
                "Pausa",
                "O assinante pode pausar até 2 meses por ano sem custo. A pausa vale a partir do "
                "próximo ciclo de cobrança.",
            ),
            (
                "Cancelamento",
                "O cancelamento pode ser feito no chat depois da confirmação de identidade. A "
                "remessa do ciclo atual, se já faturada, é enviada normalmente. O cancelamento "
                "vale a partir do ciclo seguinte.",
            ),
            (
                "Multa",
                "Planos com fidelidade de 12 meses cobram multa de 30% das mensalidades "
                "restantes quando cancelados antes de completar a fidelidade. Depois de 12 "
                "meses, o cancelamento é sem multa. Planos mensais não têm multa.",
            ),
        ),
    ),
    "KB-163": (
        "Pedido consta como entregue, mas o cliente não recebeu",
        (
            (
                "Verificação",
                "Confira no rastreio o nome e o documento de quem recebeu, o horário e a "
                "geolocalização da baixa. Pergunte se alguém da casa, portaria ou vizinho pode "
                "ter recebido. Muitos casos se resolvem em 24 horas.",
            ),
            (
                "Chamado de extravio",
                "Se o cliente confirma que não recebeu, abra chamado do tipo extravio com a "
                "transportadora. A investigação leva até 5 dias úteis. Concluída a investigação "
                "sem localizar o objeto, ofereça reenvio sem custo ou reembolso integral.",
            ),
            (
                "Atenção a golpes",
                "Mensagens de SMS com links para pagar taxa de reentrega não são enviadas pela "
                "Casa Aurora. Oriente o cliente a não clicar.",
            ),
        ),
    ),
    "KB-171": (
        "Segunda via de nota fiscal (DANFE)",
        (
            (
                "Como emitir",
                "Emita a segunda via pelo sistema fiscal informando o número do pedido. O DANFE "
                "traz nome, CPF e endereço do destinatário.",
            ),
            (
                "Como entregar ao cliente",
                "Por padrão, envie o PDF ao e-mail do cadastro. Alternativa: gere um link "
                "temporário (validade de 24 horas) e envie no próprio chat. Respeite a "
                "preferência de canal registrada pelo cliente.",
            ),
        ),
    ),
    "KB-190": (
        "Proteção de dados no atendimento (LGPD)",
        (
            (
                "Canais",
                "Use apenas o canal que o cliente autorizou para enviar documentos com dados "
                "pessoais. Quando o cliente pede para não receber dados por um canal, registre "
                "nota no cadastro e siga a preferência em todo o atendimento.",
            ),
            (
                "Incidente",
                "Se dados pessoais forem enviados por canal não autorizado, abra chamado do tipo "
                "incidente_privacidade com prioridade alta, informe o cliente com transparência "
                "e não tente recuperar a mensagem por conta própria. O encarregado de dados "
                "(DPO) avalia a comunicação à ANPD.",
            ),
        ),
    ),
}


KB_GENERAL: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "KB-001": (
        "Padrões de atendimento Casa Aurora",
        (
            (
                "Tom e linguagem",
                "Trate o cliente pelo primeiro nome, em português claro, sem jargão interno "
                "(não diga SLA, CD, NSU ou captura sem explicar). Frases curtas. Uma pergunta "
                "por mensagem. Se o cliente estiver irritado, reconheça o problema antes de "
                "explicar o procedimento, sem se desculpar em excesso. Nunca culpe a "
                "transportadora, o banco ou outro setor: diga o que você vai fazer. Evite "
                "promessas com data quando a data não depende de nós; ofereça o prazo do "
                "procedimento e diga quando o cliente terá notícias.",
            ),
            (
                "Identificação",
                "Antes de mostrar qualquer dado de pedido, confirme a identidade com CPF ou "
                "número do pedido mais um segundo fator (e-mail do cadastro ou data de "
                "nascimento). Não leia de volta o CPF completo nem o e-mail completo; use as "
                "formas mascaradas (123.***.***-09, m***@example.com) ao confirmar. Dados de "
                "cartão: só bandeira e últimos quatro dígitos. Nunca peça senha, código de "
                "segurança, foto de documento ou foto da fatura do cartão pelo chat.",
            ),
            (
                "Registro",
                "Cada atendimento termina com nota no cadastro: o que foi pedido, o que foi "
                "feito, protocolos abertos e preferências declaradas pelo cliente. Preferências "
                "de canal, horário e forma de contato valem para toda a conversa e para "
                "atendimentos futuros, e precisam estar em nota antes do fim da conversa. "
                "Notas não devem conter dados de cartão nem senhas; CPF só quando necessário "
                "para o procedimento.",
            ),
            (
                "Encerramento",
                "Antes de encerrar, resuma os protocolos e prazos em uma mensagem, pergunte se "
                "há mais alguma coisa e informe que o cliente receberá a pesquisa de "
                "satisfação, se tiver dado consentimento. Conversas inativas por 30 minutos "
                "são encerradas automaticamente com o resumo enviado no próprio chat.",
            ),
            (
                "Quando transferir para humano",
                "Transfira para a fila humana quando o cliente pedir, quando houver ameaça "
                "jurídica, suspeita de fraude na conta, pedido de exclusão de dados (LGPD) ou "
                "incidente de privacidade, e quando o mesmo problema já teve dois chamados sem "
                "solução. Ao transferir, deixe nota com o resumo para o cliente não repetir a "
                "história.",
            ),
        ),
    ),
    "KB-105": (
        "Política de frete e prazos de entrega",
        (
            (
                "Modalidades",
                "Normal: 3 a 9 dias úteis nas capitais do Sul e Sudeste, 5 a 14 dias úteis nas "
                "demais regiões. Expressa: 1 a 3 dias úteis nas capitais do Sul e Sudeste, "
                "disponível para itens até 30 kg. Retirada na loja: a partir de 2 horas depois "
                "da aprovação do pagamento nas lojas com estoque. Produtos grandes (móveis, "
                "tapetes acima de 2 m) seguem por transportadora dedicada com agendamento.",
            ),
            (
                "Frete grátis",
                "Compras acima de R$ 299,00 têm frete normal grátis para todo o Brasil, exceto "
                "áreas de risco e localidades atendidas apenas por balsa. Cupons de frete grátis "
                "gerados por atraso valem por 90 dias, para uma compra, em qualquer valor. "
                "Clientes do segmento ouro têm frete expresso com 50% de desconto.",
            ),
            (
                "Transportadoras",
                "RápidoLog (Sudeste e Sul, centros em Barueri e Cajamar), Loggi Express "
                "(capitais), Correios (demais localidades e áreas de difícil acesso). A "
                "transportadora é escolhida pelo sistema no despacho e não pode ser trocada "
                "depois. Redirecionamento para outro endereço custa R$ 19,90 e depende de "
                "aceite da transportadora.",
            ),
            (
                "Áreas de risco",
                "Em áreas classificadas como de risco pelas transportadoras, a entrega pode ser "
                "feita em ponto de retirada próximo, com aviso por SMS e no aplicativo. O "
                "cliente tem 7 dias corridos para retirar; depois disso o objeto volta e o "
                "pedido é cancelado com reembolso.",
            ),
        ),
    ),
    "KB-120": (
        "Trocas e devoluções",
        (
            (
                "Arrependimento",
                "O cliente pode desistir da compra em até 7 dias corridos do recebimento, sem "
                "justificativa, com reembolso integral, inclusive do frete. O produto deve "
                "voltar com todos os acessórios; a embalagem original não é obrigatória. A "
                "coleta é agendada pelo atendimento ou o cliente pode postar numa agência com "
                "o código de postagem enviado no chat ou no aplicativo.",
            ),
            (
                "Defeito",
                "Produtos com defeito podem ser trocados em até 30 dias (não duráveis) ou 90 "
                "dias (duráveis) do recebimento. Depois disso, o atendimento é feito pela "
                "assistência técnica do fabricante durante a garantia. Peça fotos do defeito "
                "apenas quando o produto não for coletado para análise.",
            ),
            (
                "Avaria no transporte",
                "Se o produto chegou quebrado ou amassado, o cliente deve recusar a entrega "
                "quando possível. Se já recebeu, registre em até 7 dias com fotos da embalagem "
                "e do produto; o reenvio é feito sem nova coleta para itens abaixo de R$ 200,00.",
            ),
            (
                "Reembolso",
                "O reembolso segue a forma de pagamento original, com os prazos da KB-118. "
                "Vale-presente só é oferecido quando o cliente pede; nunca como única opção.",
            ),
        ),
    ),
    "KB-130": (
        "Segmento ouro: benefícios e critérios",
        (
            (
                "Critérios",
                "Cliente com mais de R$ 3.000,00 em compras nos últimos 12 meses ou mais de 10 "
                "pedidos entregues no mesmo período. A classificação é revista todo dia 1 e "
                "aparece no cadastro (campo segmento).",
            ),
            (
                "Benefícios",
                "Cupom de frete grátis a partir de 3 dias úteis de atraso; prioridade alta "
                "automática em chamados de logística; frete expresso com 50% de desconto; "
                "atendimento humano sem fila das 8h às 22h; troca com coleta no mesmo dia nas "
                "capitais do Sudeste.",
            ),
            (
                "Como comunicar",
                "Mencione o benefício quando ele se aplicar ao problema do cliente, sem "
                "transformar o atendimento em oferta. Não diga ao cliente que ele pode perder o "
                "segmento.",
            ),
        ),
    ),
    "KB-165": (
        "Golpes comuns e como orientar o cliente",
        (
            (
                "SMS e WhatsApp de taxa de entrega",
                "Mensagens que pedem pagamento de taxa para liberar ou reagendar entrega são "
                "golpe. A Casa Aurora e as transportadoras parceiras não cobram taxa por "
                "mensagem. Oriente o cliente a não clicar, não pagar e apagar a mensagem. Se "
                "já pagou, oriente a contestar com o banco e registre nota.",
            ),
            (
                "E-mail falso de segunda via",
                "Golpistas enviam e-mails com boleto ou nota fiscal falsos imitando a loja. "
                "Por isso alguns clientes pedem para não receber documentos por e-mail; essa "
                "preferência deve ser registrada em nota e respeitada em toda a conversa. "
                "Documentos podem ser entregues por link temporário no chat.",
            ),
            (
                "Falso atendente",
                "O atendimento nunca liga pedindo código recebido por SMS, senha ou dados do "
                "cartão. Se o cliente relatar ligação assim, registre nota e abra chamado do "
                "tipo seguranca_conta.",
            ),
        ),
    ),
}


PAST_CHATS = (
    (
        "Troca por defeito (cafeteira elétrica)",
        (
            ("cliente", "Oi, a cafeteira elétrica parou de esquentar depois de duas semanas."),
            ("atendente", "Oi, {first}! Sinto muito. Consegue me dizer se a luz do painel acende?"),
            ("cliente", "Acende, mas a água sai fria."),
            ("atendente", "Está no prazo de troca por defeito; vou agendar a coleta."),
            ("cliente", "Pode ser na quinta de manhã?"),
            ("atendente", "Agendado para quinta, das 8h às 12h. A nova sai após a coleta."),
            ("cliente", "Perfeito, obrigada!"),
            ("atendente", "Eu que agradeço. Protocolo registrado e nota no seu cadastro."),
        ),
    ),
    (
        "Cupom não aplicado no carrinho",
        (
            ("cliente", "O cupom AURORA10 não entrou na minha compra de ontem."),
            ("atendente", "Oi, {first}! O cupom vale acima de R$ 200,00 em utilidades."),
            ("cliente", "A compra foi de R$ 259,00, todas as peças eram de cozinha."),
            ("atendente", "Verifiquei: houve uma falha na aplicação. Vou estornar a diferença."),
            ("cliente", "Vai no cartão mesmo?"),
            ("atendente", "Sim, no mesmo cartão, R$ 25,90, em até 2 faturas."),
            ("cliente", "Ok, obrigada."),
        ),
    ),
    (
        "Produto com avaria na entrega",
        (
            ("cliente", "Chegou uma das taças quebrada, a caixa estava amassada."),
            ("atendente", "Que chato, {first}. Pode me mandar uma foto da caixa e da taça?"),
            ("cliente", "Mandei agora."),
            ("atendente", "Recebi. Como o item é abaixo de R$ 200,00, o reenvio sai sem coleta."),
            ("cliente", "Ótimo. Demora quanto?"),
            ("atendente", "Chega em até 5 dias úteis. Vou deixar anotado no seu cadastro."),
        ),
    ),
)


def fake_cpf(rng: random.Random) -> str:
    while True:
        base = "".join(str(rng.randint(0, 9)) for _ in range(9))
        if len(set(base)) > 1:
            break
    digits = base + cpf_check_digits(base)
    return f"{digits[:3]}.{digits[3:6]}.{digits[6:9]}-{digits[9:]}"


def fake_cnpj(rng: random.Random) -> str:
    digits = [rng.randint(0, 9) for _ in range(8)] + [0, 0, 0, 1]
    for weights in ((5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2), (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2)):
        remainder = sum(d * w for d, w in zip(digits, weights, strict=True)) % 11
        digits.append(0 if remainder < 2 else 11 - remainder)
    text = "".join(map(str, digits))
    return f"{text[:2]}.{text[2:5]}.{text[5:8]}/{text[8:12]}-{text[12:]}"


def ascii_fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()


def pt_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def money_text(value: float) -> str:
    return f"{value:.2f}"
