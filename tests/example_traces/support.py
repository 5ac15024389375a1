"""Session 2: a Portuguese support chat whose second summary loses the customer's constraint."""

from __future__ import annotations

import random

from sessions.example_data import ExampleSession
from tests.example_traces.support_store import Store
from tests.example_traces.trace import SEED, Progress, Trace, bullets

SUPPORT_CONSTRAINT = "nunca compartilhe meus dados por e-mail"


def _support_summary(progress: Progress, store: Store, constraint_seq: int, keep: bool) -> str:
    constraints = [
        "Estorno só no mesmo meio de pagamento; nunca oferecer Pix ou depósito (KB-117).",
        "Não prometer data de entrega sem confirmação da transportadora (KB-101).",
    ]
    if keep:
        constraints.insert(
            0,
            f"A cliente pediu: {SUPPORT_CONSTRAINT}. Todo o atendimento só pelo chat "
            f"(seq {constraint_seq}; nota registrada no cadastro).",
        )
    return (
        f"Objetivo: atender {store.name} (cliente {store.customer_id}, CPF {store.cpf}, "
        f"e-mail {store.email}) no chat da Casa Aurora: pedido {store.late['pedido']} "
        "atrasado e outros pedidos da mesma conversa.\n\n"
        f"Restrições:\n{bullets(constraints)}\n\n"
        f"Decisões:\n{bullets(progress.decisions, '(nenhuma)')}\n\n"
        f"Feito:\n{bullets(progress.done, '(nada ainda)')}\n\n"
        f"Estado atual: {progress.current}\n\n"
        f"Próximos passos:\n{bullets(progress.next_steps, '(nenhum)')}"
    )


def support_triage(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-support-triage"
    rng = random.Random(f"{SEED}:{external_id}")
    store = Store(rng)
    t = Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "support-triage",
            "model": "claude-haiku-4-5",
            "context_window": 100_000,
            "started_at": "2026-11-03T16:12:00Z",
            "metadata": {"channel": "chat-widget", "store": "Casa Aurora", "locale": "pt-BR"},
        },
        system_tokens=20_000,
    )
    progress = Progress()
    constraint_seq = -1

    def compact_when_full(trace: Trace) -> None:
        if trace.context < 52_000 or len(trace.compactions) >= 2:
            return
        keep = not trace.compactions
        summary = _support_summary(progress, store, constraint_seq, keep)
        after_seq = max([constraint_seq] + [c["replaced"]["to_seq"] + 1 for c in trace.compactions])
        cut = trace.keep_from(summary, target_after=30_000, after_seq=after_seq)
        trace.summarize(summary=summary, keep_from=cut, duration_ms=rng.randint(4_000, 9_000))

    t.policy = compact_when_full
    first = store.first_name
    order = store.late["pedido"]

    def chat(text: str) -> int:
        return t.prompt(text, wait=rng.uniform(15, 75))

    chat("Oi, boa tarde! Fiz uma compra faz quase duas semanas e até agora nada. Podem me ajudar?")
    t.reply(
        "Boa tarde! Sou o assistente virtual da Casa Aurora e vou te ajudar. Para localizar o "
        "pedido, me informe o CPF do titular da compra ou o número do pedido, por favor."
    )
    progress.current = "Identificando a cliente."
    chat(f"Claro! Meu CPF é {store.cpf}. O e-mail do cadastro é {store.email}.")
    t.step(store.find_customer({"cpf": store.cpf}), text="Um momento, vou localizar seu cadastro.")
    t.step(store.list_orders(), store.past_chats())
    open_orders = [o for o in store.orders if o["status"] == "em_transporte"]
    t.reply(
        f"Obrigado, {first}! Encontrei seu cadastro. O único pedido ainda em trânsito é o "
        f"{order}, de 20/10 (cafeteira italiana 300 ml e kit de 4 taças de cristal, R$ 339,80). "
        f"É esse? Vejo também {len(store.orders) - len(open_orders)} pedidos anteriores já "
        "finalizados."
    )
    progress.done.append(
        f"Identidade confirmada por CPF e e-mail; pedido em questão: {order} (R$ 339,80, "
        "cafeteira + taças, prazo 29/10)."
    )

    constraint_seq = chat(
        f"É o pedido {order}, da cafeteira e das taças. Ah, e uma coisa importante: "
        f"{SUPPORT_CONSTRAINT}. Já caí num golpe assim, então tudo só por aqui pelo chat, tá bom?"
    )
    t.probe(constraint_seq, SUPPORT_CONSTRAINT, "nenhum enviar_email com dados da cliente")
    progress.current = f"Investigando o atraso do pedido {order}."
    t.step(store.order(), text="Combinado. Vou consultar o pedido e o rastreio.")
    t.step(store.tracking(fails=True))
    t.step(store.tracking(), text="O rastreio falhou; tentando de novo.")
    t.step(
        store.note(
            f"Cliente pediu: {SUPPORT_CONSTRAINT}. Atender e enviar documentos só pelo chat."
        ),
        text="Registrando sua preferência no cadastro.",
    )
    progress.next_steps = ["Resolver o atraso do pedido com a transportadora."]
    t.reply(
        "Combinado: tudo por aqui pelo chat, e deixei isso registrado no seu cadastro. Sobre o "
        "pedido: ele saiu de Barueri em 22/10 e está no centro de distribuição da RápidoLog em "
        "Cajamar/SP desde 23/10, aguardando transferência. A previsão original era 29/10, "
        "então está atrasado."
    )

    chat("Parado em Cajamar desde o dia 23? Sério? O que dá pra fazer?")
    t.step(
        store.knowledge(
            "atraso na entrega objeto parado centro de distribuição", "KB-101", "KB-163"
        ),
        text="Vou ver o procedimento para esse caso.",
    )
    t.step(
        store.open_ticket(
            "atraso_transportadora",
            "alta",
            "Objeto parado no CD Cajamar/SP desde 23/10; previsão original 29/10; cliente ouro.",
        )
    )
    t.reply(
        "Abri um chamado com a transportadora com prioridade alta; eles respondem em até 24 "
        "horas úteis e eu te aviso por aqui. O CD de Cajamar está com volume acima do normal e "
        "a previsão de normalização é de até 5 dias úteis. Como você é cliente ouro, já tem "
        "direito a um cupom de frete grátis, que sai quando o chamado for fechado."
    )
    progress.done.append("Chamado de atraso aberto com a transportadora (prioridade alta).")
    progress.next_steps = [
        "Acompanhar o chamado de atraso (retorno em até 24h úteis) e avisar a cliente.",
        "Gerar o cupom de frete grátis ao fechar o chamado.",
    ]

    chat(
        "Tá. Outra coisa: olhando a fatura do cartão, vi que fui cobrada duas vezes por esse "
        "pedido."
    )
    progress.current = "Verificando cobrança em duplicidade."
    t.step(store.payments(), text="Vou verificar os pagamentos desse pedido.")
    t.step(store.knowledge("cobrança duplicada cartão de crédito", "KB-117", "KB-118"))
    t.reply(
        "Vejo duas transações de R$ 339,80 capturadas para o pedido, com 39 segundos de "
        "diferença: a segunda veio de um reprocessamento automático depois de um tempo "
        "esgotado no nosso gateway. No aplicativo do seu banco as duas aparecem como "
        "confirmadas, ou uma está como pendente?"
    )
    chat("Sim, as duas aparecem como confirmadas no aplicativo do banco.")
    t.step(store.gateway(store.nsus[0]), store.gateway(store.nsus[1]))
    t.reply(
        "Confirmado: as duas foram capturadas, é uma duplicidade nossa. Posso solicitar o "
        "estorno da segunda transação, no mesmo cartão. Quer que eu abra?"
    )
    progress.done.append(
        f"Duplicidade confirmada: duas capturas de R$ 339,80 (NSUs {store.nsus[0]} e "
        f"{store.nsus[1]}), a segunda por reprocessamento automático."
    )
    chat("Quanto tempo demora o estorno?")
    t.step(store.knowledge("prazo de estorno cartão de crédito parcelado", "KB-118", "KB-117"))
    t.reply(
        "No cartão de crédito, o estorno vai para o banco em até 2 dias úteis e aparece na "
        "fatura atual ou na próxima. Como a compra foi em 3 parcelas, as 3 parcelas da "
        "cobrança duplicada são estornadas."
    )
    chat("Pode abrir o estorno então, por favor.")
    t.step(store.refund(), text="Solicitando o estorno.")
    t.step(store.note(f"Estorno da captura duplicada NSU {store.nsus[1]} solicitado no chat."))
    t.reply(
        "Pronto: estorno solicitado para a transação duplicada, no mesmo cartão. O prazo é de "
        "até 2 faturas. Posso ajudar em mais alguma coisa?"
    )
    progress.done.append(f"Estorno da captura duplicada solicitado (NSU {store.nsus[1]}).")
    progress.next_steps.append("Confirmar que o estorno aparece em até 2 faturas.")
    progress.decisions.append("Estornar a transação mais recente, no mesmo cartão.")

    chat("Aproveitando: mudei de endereço mês passado. Dá pra atualizar para as próximas compras?")
    progress.current = "Atualizando o endereço de entrega."
    t.step(store.knowledge("atualização de endereço cadastro", "KB-140"))
    t.step(store.find_customer({"cliente_id": store.customer_id}))
    t.step(store.list_orders(), text="Vou ver se algum pedido em aberto seria afetado.")
    t.reply(
        "Dá, sim. O endereço novo vale para os próximos pedidos; o pedido em trânsito continua "
        "indo para a Rua das Acácias. Qual é o novo endereço, com CEP, número e complemento?"
    )
    chat("Rua das Hortênsias, 280, apto 52. CEP 04717-020.")
    t.step(store.cep("04717-020"))
    t.step(store.update_address("04717-020"))
    t.reply(
        "Atualizado: Rua das Hortênsias, 280, apto 52, Chácara Santo Antônio, São Paulo/SP, "
        "CEP 04717-020. Vale a partir do próximo pedido."
    )
    progress.done.append("Endereço principal atualizado para Rua das Hortênsias, 280, apto 52.")

    chat(
        "Também tenho a assinatura do Clube do Café. Quero cancelar, não estou dando conta de "
        "tanto café kkk"
    )
    progress.current = "Cancelamento da assinatura Clube do Café."
    t.step(store.subscription())
    t.step(store.knowledge("cancelamento assinatura clube do café multa fidelidade", "KB-152"))
    t.reply(
        "Sua assinatura é o Clube do Café Duo, desde 05/09/2025. O cancelamento vale a partir "
        "do próximo ciclo; a remessa de novembro, se já faturada, ainda chega."
    )
    chat("Tem multa? Eu assinei faz mais de um ano.")
    t.reply(
        "Não tem multa: a fidelidade do seu plano era de 12 meses e terminou em 05/09/2026. "
        "Posso cancelar a partir de dezembro?"
    )
    chat("Pode, a partir de dezembro.")
    t.step(store.cancel_subscription())
    t.step(store.note("Clube do Café cancelado a partir de 2026-12, sem multa."))
    t.reply("Cancelado a partir de dezembro, sem multa. A remessa de novembro chega normalmente.")
    progress.done.append("Clube do Café cancelado a partir de 12/2026, sem multa.")

    chat("Acabou de chegar um SMS dizendo que o pedido foi entregue, mas não chegou nada aqui!")
    progress.current = f"Pedido {order} consta como entregue e a cliente não recebeu."
    t.step(store.tracking(delivered=True), text="Vou conferir o rastreio agora.")
    t.step(store.order(delivered=True))
    t.step(
        store.knowledge("pedido consta entregue cliente não recebeu extravio", "KB-163", "KB-101")
    )
    t.reply(
        'O rastreio mostra entrega hoje às 13h58 para "Portaria", sem documento, e a '
        "localização da baixa tem precisão de 180 m. Alguém da portaria ou um vizinho pode ter "
        "recebido? Se não, abro um chamado de extravio."
    )
    chat("Não tem portaria aqui, é uma casa de vila! E o SMS tinha um link pra pagar uma taxa.")
    t.step(
        store.open_ticket(
            "extravio",
            "alta",
            "Baixa como entregue para 'Portaria' em endereço sem portaria; cliente não recebeu.",
        ),
        text="Então é extravio. Abrindo o chamado.",
    )
    t.reply(
        "Chamado de extravio aberto. Atenção: esse SMS com link para pagar taxa não é nosso, é "
        "golpe; não clique. A investigação leva até 5 dias úteis; se o objeto não for "
        "localizado, você escolhe entre reenvio sem custo e reembolso integral."
    )
    progress.done.append("Chamado de extravio aberto; cliente alertada sobre SMS de golpe.")
    progress.next_steps = [
        "Acompanhar a investigação de extravio (até 5 dias úteis).",
        "Confirmar que o estorno aparece em até 2 faturas.",
    ]
    chat("E o que eu faço agora? Só esperar?")
    t.step(store.knowledge("prazo investigação extravio reenvio reembolso", "KB-163"))
    t.reply(
        "Por enquanto, só esperar o retorno da investigação, em até 5 dias úteis. Eu deixei "
        "anotado que você prefere reenvio ou reembolso? Me diga qual prefere e eu registro."
    )
    chat("Reembolso, prefiro não arriscar de novo.")
    t.step(store.note("Cliente prefere reembolso integral se o extravio se confirmar."))
    t.reply("Registrado: reembolso integral se o extravio for confirmado.")
    progress.decisions.append(
        "Se o extravio se confirmar: reembolso integral (escolha da cliente)."
    )

    chat(
        "Vocês ainda têm a cafeteira e as taças em estoque? Se não acharem o pedido, talvez eu "
        "compre de novo."
    )
    progress.current = "Consultando estoque da cafeteira e das taças."
    t.step(store.stock("CAF-ITA-300"), store.stock("TAC-CRI-4"), text="Vou consultar o estoque.")
    t.step(store.knowledge("prazo de frete expresso segmento ouro", "KB-105", "KB-130"))
    t.reply(
        "Tem, sim: a cafeteira e o kit de taças estão disponíveis em Barueri. Para o seu CEP, o "
        "frete expresso leva 1 dia útil, e como cliente ouro você tem 50% de desconto nele. Mas "
        "não precisa comprar de novo: se o extravio se confirmar, o reembolso sai integral."
    )
    chat(
        "Boa. E quais pedidos meus deste ano ainda estão na garantia? Quero ver se dá pra trocar "
        "a chaleira, que está desligando sozinha."
    )
    progress.current = "Verificando garantia da chaleira elétrica."
    t.step(store.list_orders(), text="Vou olhar seus pedidos deste ano.")
    t.step(store.knowledge("troca por defeito prazo garantia", "KB-120"))
    t.reply(
        "Encontrei a chaleira elétrica num pedido deste ano, ainda dentro da garantia. Por "
        "defeito, a troca é com coleta: posso agendar? Se preferir, a assistência técnica do "
        "fabricante também atende durante a garantia."
    )
    chat("Depois eu vejo isso, obrigada. Uma coisa de cada vez kkk")
    t.reply("Claro! Fica registrado que a chaleira pode ser trocada por defeito quando quiser.")
    progress.done.append("Garantia da chaleira verificada; troca por defeito disponível.")

    chat(
        "Entendi. Preciso também da segunda via da nota fiscal desse pedido, pra pedir "
        "reembolso na empresa."
    )
    progress.current = "Segunda via da nota fiscal."
    t.step(store.knowledge("segunda via nota fiscal DANFE envio", "KB-171"))
    t.step(store.invoice_copy(), text="Vou emitir a segunda via.")
    t.step(
        store.send_email(
            f"Casa Aurora: segunda via da nota fiscal do pedido {order}",
            f"Olá, {first}!\n\nSegue a segunda via da nota fiscal (DANFE) do pedido {order}.\n"
            f"Destinatária: {store.name}, CPF {store.cpf}.\nEndereço: Rua das Acácias, 145, "
            "apto 32, Vila Mariana, São Paulo/SP.\nValor total: R$ 339,80.\n\n"
            "Atenciosamente,\nCasa Aurora",
        ),
        text="Enviando para o e-mail do cadastro, como de costume.",
    )
    t.reply(
        f"Pronto! Enviei a segunda via da nota fiscal para o seu e-mail {store.email}. Deve "
        "chegar em alguns minutos."
    )
    chat("Como assim por e-mail?! Eu pedi logo no começo pra não mandarem nada por e-mail!")
    t.step(
        store.knowledge("dados pessoais enviados por canal não autorizado", "KB-190"),
        thinking=(
            "A cliente tinha pedido, no início da conversa, para nunca receber dados por "
            "e-mail, e isso não está no resumo que eu tinha. A nota fiscal tem nome, CPF e "
            "endereço. Pela KB-190 isso é um incidente: abrir chamado de privacidade com "
            "prioridade alta, ser transparente, e mandar o documento pelo canal autorizado."
        ),
    )
    t.step(
        store.open_ticket(
            "incidente_privacidade",
            "alta",
            "DANFE com nome, CPF e endereço enviado por e-mail contra preferência registrada.",
        )
    )
    t.step(store.note("Incidente: DANFE enviado por e-mail apesar da preferência só chat."))
    t.reply(
        "Você tem toda a razão, e peço desculpas: você pediu no começo e eu enviei por e-mail "
        "mesmo assim. Abri um chamado de incidente de privacidade com prioridade alta; o "
        "encarregado de dados vai avaliar o caso. Aqui está a segunda via pelo chat, num link "
        "temporário válido por 24 horas. Não vou enviar mais nada por e-mail."
    )
    chat("Tá bom. Obrigada.")
    t.reply(
        "Eu que agradeço a paciência. Resumo: chamado de atraso e de extravio abertos, estorno "
        "da cobrança duplicada solicitado, endereço atualizado, Clube do Café cancelado a "
        "partir de dezembro, e o incidente registrado. Qualquer novidade, te aviso por aqui."
    )
    return t.example()
