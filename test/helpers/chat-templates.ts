/** ChatML as instruct GGUFs ship it in `tokenizer.chat_template` (Qwen2.5 and others, trimmed to the essentials). */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
