"""The support back office the triage agent's tools read and write."""

from __future__ import annotations

import random
from typing import Any

from tests.example_traces.support_data import (
    CITY,
    FIRST_NAMES,
    KB_ARTICLES,
    KB_GENERAL,
    LAST_NAMES,
    PAST_CHATS,
    PRODUCTS,
    STATUSES,
    ascii_fold,
    fake_cnpj,
    fake_cpf,
    money_text,
    pt_json,
)
from tests.example_traces.trace import Call


class Store:
    """The support back office the triage agent's tools read and write."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        first, middle, last = rng.choice(FIRST_NAMES), *rng.sample(LAST_NAMES, 2)
        self.first_name = first
        self.name = f"{first} {middle} {last}"
        self.card_name = f"{ascii_fold(first)[0]} {ascii_fold(last)}".upper()
        self.cpf = fake_cpf(rng)
        self.email = f"{ascii_fold(first)}.{ascii_fold(last)}{rng.randint(10, 99)}@gmail.com"
        self.customer_id = f"cli_{rng.randint(10_000, 99_999)}"
        self.cnpj = fake_cnpj(rng)
        self.address = {
            "logradouro": "Rua das Acácias",
            "numero": "145",
            "complemento": "apto 32",
            "bairro": "Vila Mariana",
            "cidade": CITY[0],
            "uf": CITY[1],
            "cep": "04117-040",
        }
        self.orders = [self._order(i) for i in range(22)]
        late = self.orders[0]
        late["status"] = "em_transporte"
        late["itens"] = [
            {
                "sku": "CAF-ITA-300",
                "descricao": "Cafeteira italiana 300 ml",
                "quantidade": 1,
                "preco_unitario": "189.90",
            },
            {
                "sku": "TAC-CRI-4",
                "descricao": "Kit 4 taças de cristal",
                "quantidade": 1,
                "preco_unitario": "149.90",
            },
        ]
        late["pagamento"]["valor_total"] = "339.80"
        late["data"] = "2026-10-20T14:32:10-03:00"
        late["entrega"]["prazo"] = "2026-10-29"
        self.late = late
        self.protocols = 0
        self.nsus: list[str] = []

    def _order(self, index: int) -> dict[str, Any]:
        rng = self.rng
        items: list[dict[str, Any]] = []
        for product in rng.sample(PRODUCTS, rng.randint(1, 3)):
            items.append(
                {
                    "sku": product[0],
                    "descricao": product[1],
                    "quantidade": rng.choice((1, 1, 1, 2)),
                    "preco_unitario": product[2],
                }
            )
        total = sum(float(i["preco_unitario"]) * i["quantidade"] for i in items)
        month = 10 - index // 3
        day = rng.randint(1, 28)
        number = f"CA-2026-{rng.randint(100_000, 999_999)}"
        created = f"2026-{month:02d}-{day:02d}"
        return {
            "pedido": number,
            "data": f"{created}T{rng.randint(8, 22):02d}:{rng.randint(0, 59):02d}:00-03:00",
            "status": rng.choice(STATUSES),
            "itens": items,
            "pagamento": {
                "forma": rng.choice(("cartao_credito", "cartao_credito", "pix", "boleto")),
                "bandeira": "visa",
                "final_cartao": "4821",
                "parcelas": rng.choice((1, 1, 2, 3)),
                "valor_total": money_text(total),
            },
            "entrega": {
                "transportadora": rng.choice(("RápidoLog", "Loggi Express", "Correios")),
                "codigo_rastreio": f"RL{rng.randint(100_000_000, 999_999_999)}BR",
                "prazo": f"2026-{month:02d}-{min(28, day + 7):02d}",
                "endereco": dict(self.address),
            },
            "nota_fiscal": {"numero": f"000{rng.randint(100_000, 199_999)}", "serie": "1"},
            "garantia_ate": f"{2026 + (month + 3) // 12}-{(month + 2) % 12 + 1:02d}-{day:02d}",
            "avaliacao": rng.choice((None, 4, 5, 5)),
        }

    def protocol(self) -> str:
        self.protocols += 1
        return f"AT-2026-{1103_0000 + self.rng.randint(1000, 9999)}{self.protocols}"

    def call(self, name: str, arguments: dict[str, Any], result: Any, **kwargs: Any) -> Call:
        text = result if isinstance(result, str) else pt_json(result)
        return Call(name, arguments, text, seconds=self.rng.uniform(0.4, 2.2), **kwargs)

    # -- tools ---------------------------------------------------------------------------

    def find_customer(self, arguments: dict[str, Any]) -> Call:
        rng = self.rng
        history = [
            {
                "protocolo": f"AT-{2024 + i // 4}-{rng.randint(1_000_000, 9_999_999)}",
                "data": f"{2024 + i // 4}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                "canal": rng.choice(("chat", "chat", "telefone", "e-mail")),
                "assunto": rng.choice(
                    (
                        "Dúvida sobre prazo de entrega",
                        "Troca por defeito (cafeteira elétrica)",
                        "Alteração de forma de pagamento",
                        "Cupom não aplicado no carrinho",
                        "Produto com avaria na entrega",
                        "Cancelamento antes do despacho",
                    )
                ),
                "status": "resolvido",
                "nota_satisfacao": rng.choice((4, 5, 5, 5, 3)),
                "resumo": rng.choice(
                    (
                        "Cliente informada do prazo; pedido entregue no dia seguinte.",
                        "Coleta agendada e troca enviada; cliente confirmou o recebimento.",
                        "Cupom reaplicado manualmente; diferença estornada no cartão.",
                        "Avaria confirmada por fotos; reenvio sem custo.",
                        "Pedido cancelado antes do despacho; estorno em 1 fatura.",
                        "Cliente pediu para ser chamada pelo primeiro nome.",
                    )
                ),
            }
            for i in range(16)
        ]
        return self.call(
            "buscar_cliente",
            arguments,
            {
                "cliente_id": self.customer_id,
                "nome": self.name,
                "cpf": self.cpf,
                "email": self.email,
                "cliente_desde": "2019-03-14",
                "segmento": "ouro",
                "enderecos": [
                    {"tipo": "principal", **self.address},
                    {
                        "tipo": "trabalho",
                        "logradouro": "Avenida Paulista",
                        "numero": "1578",
                        "complemento": "andar 12",
                        "bairro": "Bela Vista",
                        "cidade": "São Paulo",
                        "uf": "SP",
                        "cep": "01310-200",
                    },
                ],
                "preferencias": {"canal_contato": "chat", "newsletter": False, "sms": True},
                "consentimentos": [
                    {"finalidade": "marketing_email", "concedido": False, "em": "2023-06-02"},
                    {"finalidade": "pesquisa_satisfacao", "concedido": True, "em": "2021-01-18"},
                ],
                "atendimentos_anteriores": history,
                "assinaturas": ["clube_do_cafe"],
                "observacoes": [],
            },
        )

    def past_chats(self) -> Call:
        rng = self.rng
        chats = []
        for subject, lines in PAST_CHATS:
            chats.append(
                {
                    "protocolo": f"AT-2025-{rng.randint(1_000_000, 9_999_999)}",
                    "data": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    "assunto": subject,
                    "mensagens": [
                        {"de": who, "texto": text.replace("{first}", self.first_name)}
                        for who, text in lines
                    ],
                }
            )
        return self.call(
            "consultar_atendimentos",
            {"cliente_id": self.customer_id, "limite": 3},
            {"cliente_id": self.customer_id, "atendimentos": chats},
        )

    def list_orders(self) -> Call:
        return self.call(
            "listar_pedidos",
            {"cliente_id": self.customer_id, "desde": "2026-01-01"},
            {"cliente_id": self.customer_id, "total": len(self.orders), "pedidos": self.orders},
        )

    def order(self, *, delivered: bool = False) -> Call:
        late = self.late
        history = [
            ("2026-10-20T14:32:10-03:00", "pedido_criado"),
            ("2026-10-20T14:33:02-03:00", "pagamento_aprovado"),
            ("2026-10-21T09:12:44-03:00", "separacao_iniciada"),
            ("2026-10-21T16:40:19-03:00", "nota_fiscal_emitida"),
            ("2026-10-22T08:05:51-03:00", "despachado"),
        ]
        if delivered:
            history.append(("2026-11-03T13:58:00-03:00", "entregue"))
        specs = {
            "CAF-ITA-300": {
                "material": "alumínio fundido",
                "capacidade": "300 ml (6 xícaras)",
                "fogao": "gás, elétrico e vitrocerâmico (não indução)",
                "garantia": "12 meses contra defeitos de fabricação",
                "dimensoes_cm": {"altura": 21, "largura": 13, "profundidade": 10},
                "peso_kg": 0.62,
                "cuidados": "Não lavar na lava-louças; secar antes de guardar.",
            },
            "TAC-CRI-4": {
                "material": "cristal sonoro sem chumbo",
                "capacidade": "450 ml cada",
                "garantia": "90 dias",
                "dimensoes_cm": {"altura": 23, "diametro": 9},
                "peso_kg": 1.4,
                "cuidados": "Lava-louças no ciclo delicado; evitar choque térmico.",
                "embalagem": "caixa com berço de papelão moldado, selo de frágil",
            },
        }
        items = [{**item, "ficha_tecnica": specs.get(item["sku"], {})} for item in late["itens"]]
        return self.call(
            "consultar_pedido",
            {"pedido": late["pedido"]},
            {
                **late,
                "itens": items,
                "status": "entregue" if delivered else late["status"],
                "cliente_id": self.customer_id,
                "historico": [{"em": at, "evento": what} for at, what in history],
                "nota_fiscal": {"numero": "000184233", "serie": "1", "emitida_em": history[3][0]},
                "frete": {"valor": "0.00", "modalidade": "normal", "cupom": "FRETEGRATIS"},
                "canal_venda": "app_android",
            },
        )

    def tracking(self, *, delivered: bool = False, fails: bool = False) -> Call:
        code = self.late["entrega"]["codigo_rastreio"]
        if fails:
            return self.call(
                "rastrear_entrega",
                {"codigo": code},
                "Erro 503: serviço de rastreio da transportadora indisponível. Tente novamente "
                "em alguns instantes.",
                is_error=True,
            )
        events = [
            ("2026-10-22T08:05", "Barueri/SP", "Objeto postado"),
            ("2026-10-22T19:41", "Barueri/SP", "Objeto em trânsito para o centro de distribuição"),
            ("2026-10-23T06:12", "Cajamar/SP", "Objeto recebido no centro de distribuição"),
            ("2026-10-23T06:40", "Cajamar/SP", "Objeto em triagem"),
            ("2026-10-24T22:03", "Cajamar/SP", "Objeto aguardando transferência"),
            ("2026-10-27T05:55", "Cajamar/SP", "Objeto aguardando transferência (reprogramado)"),
        ]
        if delivered:
            events += [
                ("2026-11-03T06:21", "Cajamar/SP", "Objeto em trânsito para a unidade de entrega"),
                ("2026-11-03T09:47", "São Paulo/SP", "Objeto saiu para entrega ao destinatário"),
                ("2026-11-03T13:58", "São Paulo/SP", "Objeto entregue ao destinatário"),
            ]
        result: dict[str, Any] = {
            "codigo": code,
            "transportadora": self.late["entrega"]["transportadora"],
            "situacao": "entregue" if delivered else "em_transito",
            "previsao_original": "2026-10-29",
            "eventos": [
                {"data": at, "local": where, "descricao": what} for at, where, what in events
            ],
        }
        if delivered:
            result["recebedor"] = {
                "nome": "Portaria",
                "documento": "nao_informado",
                "geolocalizacao": {"lat": -23.5893, "lon": -46.6345, "precisao_m": 180},
            }
        return self.call("rastrear_entrega", {"codigo": code}, result)

    def knowledge(self, query: str, *articles: str) -> Call:
        library = {**KB_ARTICLES, **KB_GENERAL}
        related = [a for a in library if a not in articles]
        articles = (*articles, *self.rng.sample(related, 7 - len(articles)))
        results = [
            {
                "id": article,
                "titulo": library[article][0],
                "atualizado_em": (
                    f"2026-{self.rng.randint(6, 10):02d}-{self.rng.randint(1, 28):02d}"
                ),
                "relevancia": round(0.93 - 0.11 * rank - self.rng.random() * 0.04, 2),
                "conteudo": "\n\n".join(
                    f"## {title}\n{text}" for title, text in library[article][1]
                ),
            }
            for rank, article in enumerate(articles)
        ]
        return self.call(
            "consultar_base_conhecimento",
            {"consulta": query},
            {"consulta": query, "resultados": results},
        )

    def open_ticket(self, kind: str, priority: str, description: str) -> Call:
        protocol = self.protocol()
        return self.call(
            "abrir_chamado",
            {
                "tipo": kind,
                "pedido": self.late["pedido"],
                "prioridade": priority,
                "descricao": description,
            },
            {
                "protocolo": protocol,
                "status": "aberto",
                "fila": {
                    "atraso_transportadora": "logistica-parceiros",
                    "extravio": "logistica-parceiros",
                    "incidente_privacidade": "privacidade-dpo",
                }.get(kind, "atendimento-n2"),
                "sla": "24h úteis" if priority == "alta" else "48h úteis",
                "criado_em": "2026-11-03T13:40:00-03:00",
            },
        )

    def note(self, text: str) -> Call:
        return self.call(
            "registrar_nota",
            {"cliente_id": self.customer_id, "texto": text},
            {"ok": True, "nota_id": f"nt_{self.rng.randint(100_000, 999_999)}"},
        )

    def payments(self) -> Call:
        rng = self.rng
        transactions: list[dict[str, Any]] = []
        for index, at in enumerate(("2026-10-20T14:33:02-03:00", "2026-10-20T14:33:41-03:00")):
            transactions.append(
                {
                    "nsu": f"{rng.randint(100_000_000, 999_999_999)}",
                    "autorizacao": f"{rng.randint(100_000, 999_999)}",
                    "status": "capturada",
                    "valor": "339.80",
                    "parcelas": 3,
                    "bandeira": "visa",
                    "final_cartao": "4821",
                    "capturada_em": at,
                    "origem": "checkout" if index == 0 else "reprocessamento_automatico",
                    "antifraude": {"score": rng.randint(5, 20), "decisao": "aprovar"},
                }
            )
        self.nsus = [t["nsu"] for t in transactions]
        log = [
            f"14:33:01.882 POST /v3/payments pedido={self.late['pedido']} valor=339.80 -> 202",
            "14:33:31.883 timeout aguardando retorno do adquirente (30000 ms)",
            "14:33:31.900 retry 1/2 idempotency_key=ausente",
            f"14:33:41.204 POST /v3/payments pedido={self.late['pedido']} valor=339.80 -> 201",
            f"14:33:41.377 webhook adquirente: captura nsu={transactions[0]['nsu']}",
            f"14:33:41.902 webhook adquirente: captura nsu={transactions[1]['nsu']}",
            "14:33:42.015 conciliacao: 2 capturas para 1 pedido (alerta DUP-PAY enviado)",
        ]
        return self.call(
            "consultar_pagamentos",
            {"pedido": self.late["pedido"]},
            {"pedido": self.late["pedido"], "transacoes": transactions, "log_gateway": log},
        )

    def gateway(self, nsu: str) -> Call:
        rng = self.rng
        return self.call(
            "consultar_transacao_gateway",
            {"nsu": nsu},
            {
                "nsu": nsu,
                "tid": f"{rng.randint(10**15, 10**16 - 1)}",
                "adquirente": "Cielo",
                "mcc": "5719",
                "estabelecimento": {"nome": "CASA AURORA COM LTDA", "cnpj": self.cnpj},
                "portador": {"bin": "453211", "final": "4821", "nome_impresso": self.card_name},
                "valor": {"total": "339.80", "moeda": "BRL", "parcelas": 3},
                "eventos": [
                    {
                        "em": "2026-10-20T14:33:02-03:00",
                        "tipo": "autorizacao",
                        "codigo_retorno": "00",
                    },
                    {"em": "2026-10-20T14:33:41-03:00", "tipo": "captura", "codigo_retorno": "00"},
                    {
                        "em": "2026-10-21T02:00:00-03:00",
                        "tipo": "liquidacao_agendada",
                        "previsao": "2026-11-19",
                    },
                ],
                "estorno_possivel": True,
            },
        )

    def refund(self) -> Call:
        return self.call(
            "solicitar_estorno",
            {"pedido": self.late["pedido"], "nsu": self.nsus[1], "valor": "339.80"},
            {
                "protocolo": self.protocol(),
                "status": "enviado_ao_emissor",
                "prazo": "até 2 faturas",
            },
        )

    def cep(self, cep: str) -> Call:
        return self.call(
            "consultar_cep",
            {"cep": cep},
            {
                "cep": cep,
                "logradouro": "Rua das Hortênsias",
                "bairro": "Chácara Santo Antônio",
                "cidade": "São Paulo",
                "uf": "SP",
                "ibge": "3550308",
            },
        )

    def update_address(self, cep: str) -> Call:
        address = {
            "logradouro": "Rua das Hortênsias",
            "numero": "280",
            "complemento": "apto 52",
            "bairro": "Chácara Santo Antônio",
            "cidade": "São Paulo",
            "uf": "SP",
            "cep": cep,
        }
        return self.call(
            "atualizar_cadastro",
            {"cliente_id": self.customer_id, "endereco_principal": address},
            {
                "ok": True,
                "alterado_em": "2026-11-03T13:51:12-03:00",
                "endereco_anterior": self.address,
            },
        )

    def subscription(self) -> Call:
        rng = self.rng
        shipments = [
            {
                "ciclo": f"{2025 + (9 + m) // 12}-{(9 + m) % 12 + 1:02d}",
                "cafes": rng.sample(
                    [
                        "Sul de Minas natural 250 g",
                        "Mogiana amarelo bourbon 250 g",
                        "Cerrado mineiro fermentado 250 g",
                        "Chapada Diamantina 250 g",
                        "Caparaó catuaí vermelho 250 g",
                        "Alta Mogiana descafeinado 250 g",
                    ],
                    2,
                ),
                "valor": "89.90",
                "status": "entregue",
            }
            for m in range(14)
        ]
        return self.call(
            "consultar_assinatura",
            {"cliente_id": self.customer_id},
            {
                "assinatura": "clube_do_cafe",
                "plano": "Clube do Café Duo (fidelidade 12 meses)",
                "inicio": "2025-09-05",
                "fidelidade_ate": "2026-09-05",
                "proxima_cobranca": "2026-11-05",
                "valor_mensal": "89.90",
                "remessas": shipments,
            },
        )

    def cancel_subscription(self) -> Call:
        return self.call(
            "cancelar_assinatura",
            {"cliente_id": self.customer_id, "a_partir_de": "2026-12"},
            {
                "ok": True,
                "multa": "0.00",
                "ultima_remessa": "2026-11",
                "protocolo": self.protocol(),
            },
        )

    def stock(self, sku: str) -> Call:
        centers = ("Barueri/SP", "Cajamar/SP", "Contagem/MG", "Recife/PE", "Curitiba/PR")
        return self.call(
            "consultar_estoque",
            {"sku": sku},
            {
                "sku": sku,
                "descricao": next(p[1] for p in PRODUCTS if p[0] == sku),
                "preco_atual": next(p[2] for p in PRODUCTS if p[0] == sku),
                "estoque": [
                    {
                        "centro": center,
                        "disponivel": self.rng.randint(0, 140),
                        "reservado": self.rng.randint(0, 30),
                        "reposicao_prevista": f"2026-11-{self.rng.randint(5, 28):02d}",
                    }
                    for center in centers
                ],
                "prazo_estimado_cep_cliente": {"normal": "4 dias úteis", "expressa": "1 dia útil"},
            },
        )

    def invoice_copy(self) -> Call:
        key = "".join(str(self.rng.randint(0, 9)) for _ in range(44))
        return self.call(
            "emitir_segunda_via_nf",
            {"pedido": self.late["pedido"]},
            {
                "numero": "000184233",
                "serie": "1",
                "chave_acesso": key,
                "emitente": {"razao_social": "Casa Aurora Comércio Ltda", "cnpj": self.cnpj},
                "destinatario": {"nome": self.name, "cpf": self.cpf, "endereco": self.address},
                "itens": self.late["itens"],
                "valor_total": "339.80",
                "pdf": f"https://nf.casaaurora.example/danfe/{key}.pdf",
                "link_temporario_chat": f"https://nf.casaaurora.example/t/{key[-10:]}",
            },
        )

    def send_email(self, subject: str, body: str) -> Call:
        return self.call(
            "enviar_email",
            {"para": self.email, "assunto": subject, "corpo": body},
            {
                "status": "enviado",
                "message_id": f"<{self.rng.randint(10**8, 10**9)}@mail.casaaurora.example>",
            },
        )
