"""Example requests for a sensitive value, per language and entity type, that strict redaction compares a turn's
last sentence with (redaction.requests_by_meaning): a turn that means one of them is a request, however it is
worded; and requests for what is not personal data (an order number, a reference), which a turn must be further
from. Written for this purpose, not taken from the benchmark's calls; the threshold is fitted on its fit part
(benchmarks/redaction.py --requests)."""

from __future__ import annotations

REQUEST_EXAMPLES: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "payment_card": (
            "Can I take the card number please?",
            "Could you read me the long number across the front of your card?",
            "What's the sixteen digit number on the card?",
            "And when does the card expire?",
            "What's the expiry date on the card?",
            "Can you give me the three digit code on the back?",
            "And the security code, please?",
            "Go ahead with the card details whenever you're ready.",
            "Which card would you like to pay with today, and its number?",
            "What are the last four digits of the card?",
        ),
        "bank_account": (
            "Can I have your account number please?",
            "What's your sort code?",
            "And the routing number for the bank?",
            "Could you give me your bank details for the direct debit?",
            "What's the IBAN of the account?",
            "Which account should the refund go to? I'll need the number.",
        ),
        "national_id": (
            "Can you confirm your social security number?",
            "What's your national insurance number?",
            "I'll need your passport number to continue.",
            "Could you read me your driver's license number?",
            "And the last four of your social, please?",
            "What's your tax identification number?",
        ),
        "date_of_birth": (
            "Can you confirm your date of birth?",
            "And when were you born?",
            "What's your birthday, for security?",
            "Could I get the date of birth on the account?",
            "For verification, your day, month and year of birth please.",
        ),
        "email": (
            "What's your email address?",
            "Could you spell out your email for me?",
            "Where should we email the receipt?",
            "Can I get an email address to send the confirmation to?",
            "Is your email still the same one we have on file? What is it?",
        ),
        "phone_number": (
            "What's the best number to reach you on?",
            "Can I take a phone number in case we get cut off?",
            "What number should we call you back on?",
            "Could you give me your mobile number?",
            "And a contact telephone number, please?",
        ),
    },
    "es": {
        "payment_card": (
            "¿Me puede dar el número de la tarjeta, por favor?",
            "¿Me lee los dieciséis dígitos de la tarjeta?",
            "¿Cuál es la fecha de caducidad de la tarjeta?",
            "¿Y cuándo vence la tarjeta?",
            "¿Me dice los tres dígitos que hay en el reverso?",
            "¿Y el código de seguridad, por favor?",
            "Cuando quiera, dígame los datos de la tarjeta.",
            "¿Cuáles son los últimos cuatro dígitos de la tarjeta?",
        ),
        "bank_account": (
            "¿Me puede dar su número de cuenta?",
            "¿Cuál es el IBAN de la cuenta?",
            "¿Me facilita sus datos bancarios para la domiciliación?",
            "¿A qué cuenta hacemos el reembolso? Necesito el número.",
            "¿Y el número de ruta del banco?",
        ),
        "national_id": (
            "¿Me confirma su número de DNI?",
            "¿Cuál es su número de seguro social?",
            "Necesito su número de pasaporte para continuar.",
            "¿Me dice su NIE, por favor?",
            "¿Cuál es su número de identificación fiscal?",
        ),
        "date_of_birth": (
            "¿Me confirma su fecha de nacimiento?",
            "¿Y cuándo nació usted?",
            "¿Cuál es su fecha de nacimiento, por seguridad?",
            "Para verificar, su día, mes y año de nacimiento, por favor.",
        ),
        "email": (
            "¿Cuál es su correo electrónico?",
            "¿Me deletrea su correo, por favor?",
            "¿A qué correo le enviamos el recibo?",
            "¿Me da una dirección de email para la confirmación?",
        ),
        "phone_number": (
            "¿Cuál es el mejor número para localizarle?",
            "¿Me da un teléfono por si se corta la llamada?",
            "¿A qué número le devolvemos la llamada?",
            "¿Me puede dar su número de móvil?",
        ),
    },
}

# Requests for what is not personal data: a turn closer to one of these than to every sensitive request is not one.
OTHER_REQUESTS: dict[str, tuple[str, ...]] = {
    "en": (
        "What's your order number?",
        "Can I have the reference number on the letter?",
        "What's the tracking number on the parcel?",
        "What's the model number of the device?",
        "How can I help you today?",
        "How would you like to pay?",
        "Is there anything else I can help you with?",
        "Which day suits you for the appointment?",
        "What time would you like the delivery?",
        "How many would you like to order?",
        "Can you tell me what the problem is?",
        "Could you hold for a moment please?",
    ),
    "es": (
        "¿Cuál es su número de pedido?",
        "¿Me da el número de referencia de la carta?",
        "¿Cuál es el número de seguimiento del paquete?",
        "¿En qué puedo ayudarle hoy?",
        "¿Cómo desea pagar?",
        "¿Hay algo más en lo que pueda ayudarle?",
        "¿Qué día le viene bien para la cita?",
        "¿Cuántas unidades quiere pedir?",
        "¿Me puede contar cuál es el problema?",
        "¿Puede esperar un momento, por favor?",
    ),
}
