"""Wire shapes that more than one room speaks: OpenAI's chat messages, tools and formats, encoded
for a remote server (`remote/`) and decoded at Prefill's own server's door (`server/`), in one
codec (`openai_chat.py`), so the two never drift apart."""
